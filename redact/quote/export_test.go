package quote

// The window quoting shares with redact.Redactor.Cut, which this package
// may not import; partial_test.go holds it, and PartialMarker, equal.
const (
	RedactWindow = redactWindow
)
