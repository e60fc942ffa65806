// Package review is what a reviewer runs over porthole's audit trail:
// verify a file or a rotated series, report who asked what, and write the
// report as one HTML page. Package audit writes the trail; porthole
// itself runs this package only for its audit subcommands.
//
// # Verify
//
// [VerifyWith] walks one file or a rotated series and reports the first
// record that was edited, deleted, reordered, inserted or truncated, a
// series that does not begin at its genesis (or the checkpoint named), and
// any witnessed checkpoint the series contradicts or does not reach. With
// only the public key and the checkpoints, a verifier proves the series
// complete up to the latest checkpoint; nothing proves what came after it.
// [Prune] verifies an archived series before it removes its oldest files.
//
// # Reports
//
// [Report] verifies the files with VerifyWith before it counts anything,
// each chain (one per replica) as a series of its own, and refuses files
// that do not verify ([ErrNotVerified]) unless told to read them anyway; then the summary says so (Verified false, the Problem),
// and its table repeats a warning naming the problem on every page. With an
// HMAC key each record is checked again as it is read, and one whose HMAC
// does not verify is only counted as unverified: a principal edited by
// someone without the key is never counted as genuine. Without a key only
// the links were checked, and the report says so.
//
// [Summary.WriteHTML] writes the same summary as one page for a reviewer.
// Everything on it that a record holds is untrusted, and is shown as text:
// html/template escapes each value where it lands, a value that is not
// plain printable ASCII is shown quoted (a bidi override as \u202e), and
// values are cut to a prefix with their length said. The page runs no
// script and fetches nothing, by its Content-Security-Policy
// (default-src 'none', its one style sheet allowed by hash), so an escape
// missed would still run nothing and tell nobody the page was opened. What
// the page adds to the counts ([Detail]) is bounded: the earliest
// [DefaultMaxRows] records and at most [MaxTimelineBuckets] intervals.
package review
