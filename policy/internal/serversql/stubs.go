package serversql

// The types token.go names for the parser's sake. The tokenizer alone never
// reads them: the parse tree and partial DDL statement are only stored and
// reset, and Lex, which fills the parser's symbol, is not called here.
type (
	Statement any
	DDL       struct{}
	yySymType struct{ bytes []byte }
)
