package quote

// The window and the marker quoting shares with redact.Redactor.Cut, which
// this package may not import; partial_test.go holds them equal.
const (
	RedactWindow  = redactWindow
	PartialMarker = partialMarker
)
