// Package serversql is the visibility-query tokenizer of the Temporal server,
// copied so that porthole's tests can hold porthole's query screen to it.
//
// # What it mirrors
//
// Temporal server v1.29.1 (and the CLI v1.5.1 dev server the tests run)
// parses visibility queries with github.com/temporalio/sqlparser at
// v0.0.0-20231115171017-f4060bcfa6cb. porthole screens with v0.1.0 of the
// same module. The two share one module path, so one build cannot import
// both; this package holds the server's revision of the tokenizer instead.
// The only difference between the two tokenizers is that the server's reads
// a MySQL comment (/*! ... */) as SQL, where v0.1.0 drops it as a comment.
//
// # What was copied, and what changed
//
//   - token.go: unchanged, but for its package clause and its imports,
//     rewritten to the two packages below.
//   - tokens.go: the token constants of the generated sql.go, unchanged.
//   - comments.go: ExtractMysqlComment, unchanged.
//   - bytes2/buffer.go: unchanged.
//   - sqltypes/value.go: the escape maps and their init, unchanged.
//   - stubs.go is porthole's own: the three types token.go names but the
//     tokenizer never uses (the parse tree, a partial DDL statement and the
//     parser's symbol), declared empty so that the parser need not be copied.
//   - staticcheck.conf is porthole's own too: make check runs no staticcheck
//     check on the copy, whose findings would be fixed upstream, not here.
//
// The copied files keep their Apache License 2.0 header; LICENSE.md beside
// this file is the module's. When porthole is checked against a newer
// server, copy that server's revision again and say so here.
//
// It is imported only by tests: nothing in the porthole binary depends on
// it, and a test in cmd/porthole holds that.
package serversql
