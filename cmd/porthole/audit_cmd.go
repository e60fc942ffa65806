package main

import (
	"flag"
	"fmt"
	"io"
)

func runAudit(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, auditUsage)
		return fmt.Errorf("%w: porthole audit verify|report|keygen|prune|prove|check-proof|note-key", errUsage)
	}
	switch args[0] {
	case "verify":
		return runAuditVerify(args[1:], stdout, stderr)
	case "report":
		return runAuditReport(args[1:], stdout, stderr)
	case "keygen":
		return runAuditKeygen(args[1:], stdout, stderr)
	case "prune":
		return runAuditPrune(args[1:], stdout, stderr)
	case "prove":
		return runAuditProve(args[1:], stdout, stderr)
	case "check-proof":
		return runAuditCheckProof(args[1:], stdout, stderr)
	case "note-key":
		return runAuditNoteKey(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, auditUsage)
		return nil
	}
	fmt.Fprint(stderr, auditUsage)
	return fmt.Errorf("%w: unknown audit command %q", errUsage, args[0])
}

// parseInterspersed parses flags that may come before, between or after
// the file arguments, and returns the files.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return files, nil
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
