package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

// serverSideFlag is Helm v4's --server-side. berth applies server-side only, under Helm v4's
// field manager, and records the apply method ssa: it takes "true", and on upgrade and rollback
// "auto" (which for a release berth applies is the same), and refuses "false", Helm's client-side
// apply, when the flag is parsed, before anything is read or changed.
type serverSideFlag struct {
	value string
	// boolean: install's --server-side is a boolean; upgrade's and rollback's a string.
	boolean bool
}

func (f *serverSideFlag) String() string { return f.value }

func (f *serverSideFlag) Type() string {
	if f.boolean {
		return "bool"
	}
	return "string"
}

func (f *serverSideFlag) Set(s string) error {
	if f.boolean {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		s = strconv.FormatBool(b)
	}
	switch {
	case s == "true", s == "auto" && !f.boolean:
		f.value = s
		return nil
	case s == "false":
		return fmt.Errorf("berth applies server-side only (as helm does by default), so client-side apply is not available: leave --server-side out, or give true")
	}
	return fmt.Errorf(`must be "true", "false" or "auto"`)
}

// addServerSideFlags adds Helm v4's --server-side and --force-conflicts, with Helm's defaults
// and exclusions. --force-conflicts changes nothing: berth's apply always takes over the fields
// other managers own, once the objects' ownership was checked (an object of another release, or
// of none, is refused unless --take-ownership).
func addServerSideFlags(cmd *cobra.Command, boolean bool) {
	f := cmd.Flags()
	ss := &serverSideFlag{value: "auto", boolean: boolean}
	usage := `must be "true", "false" or "auto". Object updates run in the server instead of the client ("auto" defaults the value from the previous chart release's method). berth applies server-side only: "false" is refused`
	if boolean {
		ss.value = "true"
		usage = `object updates run in the server instead of the client. berth applies server-side only: "false" is refused`
	}
	flag := f.VarPF(ss, "server-side", "", usage)
	if boolean {
		flag.NoOptDefVal = "true"
	}
	f.Bool("force-conflicts", false, "if set server-side apply will force changes against conflicts. berth's apply always does, once the objects' ownership was checked (see --take-ownership), so this changes nothing")
	cmd.MarkFlagsMutuallyExclusive("force-replace", "force-conflicts")
	cmd.MarkFlagsMutuallyExclusive("force", "force-conflicts")
}
