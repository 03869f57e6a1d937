// Command apidocs writes the reference of berth's Release API, docs/api.md, from the Go types in
// api/v1alpha1 (make docs). Run it from the repository's root.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/berthdev/berth/internal/apidocs"
)

func main() {
	out := flag.String("o", "docs/api.md", "the file to write")
	flag.Parse()
	page, err := apidocs.Generate(apidocs.Berth("api/v1alpha1"))
	if err == nil {
		err = os.WriteFile(*out, page, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}
