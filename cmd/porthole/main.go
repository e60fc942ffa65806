// Command porthole is a security-hardened MCP gateway that gives AI agents a
// read-only window onto one Temporal namespace.
//
//	porthole serve      MCP over streamable HTTP at POST /mcp, behind bearer tokens
//	porthole stdio      MCP over stdin and stdout, for a local MCP client
//	porthole token new  make a token for a principal and append its digest
//	porthole token list list the principals of a tokens file and their expiries
//	porthole roster pin pin the reviewed tools of upstream MCP servers
//	porthole version    print the version
//
// Every setting is an environment variable with a flag of the same meaning;
// `porthole <command> --help` lists them.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `porthole: a read-only MCP gateway to one Temporal namespace

Usage:
  porthole serve [flags]       serve MCP over HTTP at POST /mcp (bearer tokens required)
  porthole stdio [flags]       serve MCP over stdin/stdout for a local client (principal "local")
  porthole token new --name NAME [--expires 90d|never] --tokens-file FILE
                               make a token, append its digest to FILE, print the token once
  porthole token list --tokens-file FILE
                               list the principals of FILE and when their tokens expire
  porthole audit verify LOG... check the audit log's hash chain and HMACs
  porthole audit report LOG... verify the audit log, then say who asked what
  porthole witness serve       cosign audit logs' checkpoints (porthole witness --help)
  porthole roster check|pin    check the roster of upstream MCP servers; pin their reviewed tools
  porthole policy check        check the policy file; say what callers of several profiles get
  porthole disclosure          print every field of every answer, kept or withheld (--profile NAME)
  porthole version             print the version

Run 'porthole <command> --help' for the settings of a command.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code: 0 on success,
// 2 for a usage error, 3 for an audit trail that verifies but is not proven
// complete (--require-complete), 1 for anything else.
//
// Whole: the table of commands, then each kind of error's exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = runServe(args[1:], stderr)
	case "stdio":
		err = runStdio(args[1:], stderr)
	case "token":
		err = runToken(args[1:], stdout, stderr)
	case "audit":
		err = runAudit(args[1:], stdout, stderr)
	case "witness":
		err = runWitness(args[1:], stdout, stderr)
	case "roster":
		err = runRoster(args[1:], stdout, stderr)
	case "policy":
		err = runPolicy(args[1:], stdout, stderr)
	case "disclosure":
		err = runDisclosure(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		return runVersion(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "porthole: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errChainBroken), errors.Is(err, errProofRefused):
		return 1
	case errors.Is(err, errNotComplete):
		return 3
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "porthole:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "porthole:", err)
		return 1
	}
}

// errUsage marks errors in how a command was invoked.
var errUsage = errors.New("usage")
