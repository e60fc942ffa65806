package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/porthole-dev/porthole/audit/review"
	"github.com/porthole-dev/porthole/policy"
)

func runAuditReport(argv []string, stdout, stderr io.Writer) error {
	var since, until, principal, tool, htmlOut string
	var asJSON, unverified, linksOnly bool
	var vf verifyFlags
	var wf witnessFlags
	var args argFilters
	s := newSettings("audit report", "Verify audit logs (each replica's chain on its own), then summarize who asked what.", stderr)
	vf.register(s)
	wf.register(s)
	s.fs.BoolVar(&unverified, "unverified", false, "report on files that do not verify, saying so on every page (at least every 50 lines) and in the JSON; a record whose HMAC does not verify is still not counted")
	s.fs.StringVar(&since, "since", "", "only calls and denials at or after this time (RFC 3339, or a duration ago such as 24h); a result is counted with its call")
	s.fs.StringVar(&until, "until", "", "only calls and denials before this time (RFC 3339, or a duration ago)")
	s.fs.StringVar(&principal, "principal", "", "only this principal")
	s.fs.StringVar(&tool, "tool", "", "only calls of this tool, as the client named it (exact); leaves denials out")
	s.fs.Var(&args, "arg", "only calls holding this argument: name=value for a value exactly equal, name~text for one containing text (split at the first = or ~; compared as the record holds them, redacted, a value cut at 4 KiB); once per argument, all must match; leaves denials out")
	s.fs.BoolVar(&asJSON, "json", false, "write JSON instead of a table")
	s.fs.StringVar(&htmlOut, "html", "", "write the report as one self-contained HTML page to this file instead of a table: the verdict in words, charts, tables and the earliest 10,000 records; no script, nothing fetched; mode 0600, as it holds personal data. The name must end in .html, must not be a log given, and may name an existing file only when it is an earlier page")
	s.fs.BoolVar(&linksOnly, "links-only", false, "report without an HMAC key or checkpoints, checking only the links, which anyone can recompute (the report says NOT verified)")
	files, err := parseInterspersed(s.fs, argv)
	if err != nil {
		return err
	}
	files = withoutTreeFiles(files) // the records alone
	if err := checkReportOut(files, asJSON, htmlOut); err != nil {
		return err
	}
	f, err := reportFilter(principal, tool, args, since, until)
	if err != nil {
		return err
	}
	// Notes on the checkpoint files go to stderr: stdout may be JSON.
	opts, err := vf.options(stderr)
	if err != nil {
		return err
	}
	if err := wf.apply(&opts, &vf.evidence); err != nil {
		return err
	}
	if !opts.Keys.HasHMAC() && len(opts.Checkpoints) == 0 && !linksOnly {
		// Security: the links are plain hashes; a rewritten log verifies
		// by its links alone, and its principals would be counted.
		return fmt.Errorf("%w: give the audit key (--key-file, or $PORTHOLE_AUDIT_KEY_FILE) or a public key and checkpoints (--public-key, --checkpoints); --links-only reports on the links alone, which anyone can recompute, and says so", errUsage)
	}
	sum, err := review.Report(files, f, review.ReportOptions{VerifyOptions: opts, Unverified: unverified, Detail: htmlOut != ""})
	if errors.Is(err, review.ErrNotVerified) {
		return fmt.Errorf("%w; no report was written (porthole audit verify says more; --unverified reports on it anyway, marking every page)", err)
	}
	if err != nil {
		return err
	}
	if err := writeReport(sum, asJSON, htmlOut, files, vf.evidence, stdout); err != nil {
		return err
	}
	// The report is written either way; the exit status says whether
	// every series is proven complete, for a scheduled check.
	if vf.requireComplete {
		return requireComplete(sum, stderr)
	}
	return nil
}

// checkReportOut refuses a report of no file, or asked to go two places,
// or to an HTML file it must not write.
func checkReportOut(files []string, asJSON bool, htmlOut string) error {
	switch {
	case len(files) == 0:
		return fmt.Errorf("%w: name at least one log file", errUsage)
	case asJSON && htmlOut != "":
		return fmt.Errorf("%w: --json and --html each say where the report goes; give one", errUsage)
	case htmlOut != "":
		return checkHTMLOut(htmlOut, files)
	}
	return nil
}

// reportFilter is the report's filter from its flags.
func reportFilter(principal, tool string, args argFilters, since, until string) (review.Filter, error) {
	f := review.Filter{Principal: principal, Tool: tool, Args: args, Normalize: screenedQuery}
	var err error
	if f.Since, err = parseWhen(since); err != nil {
		return f, err
	}
	f.Until, err = parseWhen(until)
	return f, err
}

// writeReport writes sum as JSON, as an HTML page to htmlOut, or as a
// table.
func writeReport(sum *review.Summary, asJSON bool, htmlOut string, files, evidence []string, stdout io.Writer) error {
	switch {
	case asJSON:
		return sum.WriteJSON(stdout)
	case htmlOut != "":
		if err := writeHTMLReport(htmlOut, sum, files, evidence); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (it holds personal data: keep it as the audit log is kept)\n", htmlOut)
		return nil
	}
	return sum.WriteTable(stdout)
}

// requireComplete refuses a report any of whose series does not verify
// (errChainBroken, exit 1) or is not proven complete to its last record
// by a signed checkpoint (errNotComplete, exit 3).
func requireComplete(sum *review.Summary, stderr io.Writer) error {
	for _, s := range sum.Series {
		if !s.Verification.OK() {
			// Reported with --unverified: a broken series is broken
			// (exit 1), not merely unproven.
			fmt.Fprintf(stderr, "porthole: BROKEN: the series of %s does not verify; --require-complete exits 1\n", strings.Join(s.Verification.Files, ", "))
			return errChainBroken
		}
		if !s.Verification.ProvenComplete() {
			fmt.Fprintf(stderr, "porthole: NOT COMPLETE: no signed checkpoint proves the series of %s to its last record; --require-complete exits 3\n", strings.Join(s.Verification.Files, ", "))
			return errNotComplete
		}
	}
	return nil
}

// screenedQuery is a recorded query as porthole sent it to Temporal:
// printed from its parse (escapes read, spacing and case of keywords
// porthole's), with the custom attributes of $PORTHOLE_QUERY_ATTRIBUTES
// allowed; a query the screen refuses is left as it is.
func screenedQuery(name, value string) string {
	if name != "query" {
		return value
	}
	sq, err := policy.ScreenQuery(value, policy.QueryRules{CustomAttributes: splitList(os.Getenv("PORTHOLE_QUERY_ATTRIBUTES"))})
	if err != nil {
		return value
	}
	return sq.Text
}

// argFilters are the --arg flags of a report.
type argFilters []review.ArgFilter

func (a *argFilters) String() string { return fmt.Sprint(*a) }

// Set reads name=value (a value exactly equal) or name~text (a value
// containing text), split at the first = or ~.
func (a *argFilters) Set(v string) error {
	i := strings.IndexAny(v, "=~")
	if i < 0 {
		return fmt.Errorf("want name=value, or name~text for a value containing text")
	}
	*a = append(*a, review.ArgFilter{Name: v[:i], Value: v[i+1:], Substring: v[i] == '~'})
	return nil
}

func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%w: %q is neither an RFC 3339 time nor a duration", errUsage, s)
}
