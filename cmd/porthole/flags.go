package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// settings is a flag set whose every flag has an environment variable of the
// same meaning. A flag given on the command line wins over the variable; the
// variable wins over the default.
type settings struct {
	fs  *flag.FlagSet
	env map[string]string // flag name -> variable name
	bad []string          // variables whose values could not be parsed
}

func newSettings(name, summary string, out io.Writer) *settings {
	s := &settings{fs: flag.NewFlagSet(name, flag.ContinueOnError), env: map[string]string{}}
	s.fs.SetOutput(out)
	s.fs.Usage = func() {
		fmt.Fprintf(out, "Usage: porthole %s [flags]\n\n%s\n\nFlags (each also read from the environment variable shown):\n", name, summary)
		s.fs.PrintDefaults()
	}
	return s
}

func (s *settings) string(p *string, name, env, def, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		def = v
	}
	s.env[name] = env
	s.fs.StringVar(p, name, def, usage+" ($"+env+")")
}

func (s *settings) bool(p *bool, name, env string, usage string) {
	def := false
	if v, ok := os.LookupEnv(env); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.bad = append(s.bad, fmt.Sprintf("$%s=%q is not true or false", env, v))
		}
		def = b
	}
	s.env[name] = env
	s.fs.BoolVar(p, name, def, usage+" ($"+env+")")
}

// parse parses args and reports environment values that did not parse.
func (s *settings) parse(args []string) error {
	if err := s.fs.Parse(args); err != nil {
		return err
	}
	if len(s.bad) > 0 {
		return fmt.Errorf("%w: %s", errUsage, strings.Join(s.bad, "; "))
	}
	if s.fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, s.fs.Arg(0))
	}
	return nil
}
