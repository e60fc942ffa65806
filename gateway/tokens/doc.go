// Package tokens holds porthole's static bearer tokens: the tokens file of
// principals, token digests and optional expiries ([Set], [Parse], [Load],
// [Append], [AppendExpiring]), its reloading [Store], and the parsing of an
// Authorization header ([Bearer]).
//
// # Trust model
//
// A token is a secret of 256 random bits with the prefix "ph_" ([New]);
// porthole never stores one. The tokens file holds only each principal's
// name and the SHA-256 digest of its token, so reading the file does not let
// anyone call porthole, and a token is checked by hashing it and looking the
// digest up ([Set.Lookup], which says why a digest lookup leaks nothing).
//
// A token with an expiry is refused from that time on, by the clock of the
// machine porthole runs on ([Set.Lookup] says which refusal it was, for the
// audit record); a token without one is valid until its line is removed.
//
// The file is trusted as the operator wrote it, but read strictly: a
// malformed line, a duplicate name, a name outside a short plain alphabet,
// or an expiry not written exactly as porthole writes one refuses the whole
// file, naming the line ([ErrFile]). A reload that fails keeps the set in
// force and says why ([Store.Reload]); the first load that fails is an
// error, so porthole does not start on a broken file.
//
// The Authorization header is untrusted: [Bearer] takes exactly one header
// of the exact form "Bearer <token>" with RFC 6750 token characters, and
// nothing else. What to answer a request without one (401, the failed-auth
// limit, the audit record) is the gateway's middleware, not this package's.
package tokens
