// Package bytes2 is the Temporal server's bytes2 package (a Buffer the
// tokenizer writes into), copied unchanged beside the tokenizer that
// reads it.
package bytes2
