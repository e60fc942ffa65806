// Command calls-vulnerable is the vulnerability gate's fixture: it calls
// language.Parse of golang.org/x/text v0.3.5, which GO-2021-0113 (an
// out-of-bounds read, fixed in v0.3.7) names, so a scan must find it
// called.
package main

import (
	"fmt"
	"os"

	"golang.org/x/text/language"
)

func main() {
	tag, err := language.Parse(os.Args[1])
	fmt.Println(tag, err)
}
