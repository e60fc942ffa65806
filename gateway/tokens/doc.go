// Package tokens holds porthole's static bearer tokens: the tokens file of
// principals and token digests ([Set], [Parse], [Load], [Append]), its
// reloading [Store], and the parsing of an Authorization header ([Bearer]).
//
// # Trust model
//
// A token is a secret of 256 random bits with the prefix "ph_" ([New]);
// porthole never stores one. The tokens file holds only each principal's
// name and the SHA-256 digest of its token, so reading the file does not let
// anyone call porthole, and a token is checked by hashing it and looking the
// digest up ([Set.Lookup], which says why a digest lookup leaks nothing).
//
// The file is trusted as the operator wrote it, but read strictly: a
// malformed line, a duplicate name, or a name outside a short
// plain alphabet refuses the whole file, naming the line ([ErrFile]). A
// reload that fails keeps the set in force and says why ([Store.Reload]);
// the first load that fails is an error, so porthole does not start on a
// broken file.
//
// The Authorization header is untrusted: [Bearer] takes exactly one header
// of the exact form "Bearer <token>" with RFC 6750 token characters, and
// nothing else. What to answer a request without one (401, the failed-auth
// limit, the audit record) is the gateway's middleware, not this package's.
package tokens
