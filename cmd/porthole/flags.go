package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// settings is a flag set whose every flag has an environment variable of the
// same meaning. A flag given on the command line wins over the variable; the
// variable wins over the default.
type settings struct {
	fs     *flag.FlagSet
	bad    []string       // variables whose values could not be parsed
	checks []func() error // range checks, run after parsing
}

func newSettings(name, summary string, out io.Writer) *settings {
	s := &settings{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
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
	s.fs.StringVar(p, name, def, usage+" ($"+env+")")
}

func (s *settings) bool(p *bool, name, env string, usage string) {
	s.boolDefault(p, name, env, false, usage)
}

func (s *settings) boolDefault(p *bool, name, env string, def bool, usage string) {
	if v, ok := os.LookupEnv(env); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.bad = append(s.bad, fmt.Sprintf("$%s=%q is not true or false", env, v))
		}
		def = b
	}
	s.fs.BoolVar(p, name, def, usage+" ($"+env+")")
}

// number is what a numeric setting may hold.
type number interface {
	~int | ~int64 | ~float64
}

// numeric registers a number or a duration that must be positive, or at
// least zero when zeroOK. A value that does not parse or is out of range
// is refused by parse, naming the variable and the flag.
func numeric[T number](s *settings, p *T, name, env string, def T, zeroOK bool, usage string) {
	// parseInto sets *p only when v parses, so a bad value leaves the
	// default in place and is reported once.
	parseInto := func(v string) error {
		var parsed T
		var err error
		switch q := any(&parsed).(type) {
		case *time.Duration:
			*q, err = time.ParseDuration(v)
		case *int:
			*q, err = strconv.Atoi(v)
		case *int64:
			*q, err = strconv.ParseInt(v, 10, 64)
		case *float64:
			*q, err = strconv.ParseFloat(v, 64)
		}
		if err == nil {
			*p = parsed
		}
		return err
	}
	*p = def
	if v, ok := os.LookupEnv(env); ok && v != "" {
		if parseInto(v) != nil {
			s.bad = append(s.bad, fmt.Sprintf("$%s=%q is not a %s", env, v, kindOf(p)))
		}
	}
	s.fs.Func(name, fmt.Sprintf("%s ($%s) (default %v)", usage, env, def), parseInto)
	s.checks = append(s.checks, func() error {
		// Written so that NaN fails it, and infinity refused: either
		// would turn a rate limit off ("NaN" and "Inf" parse as floats).
		if v := float64(*p); !(v > 0 || v == 0 && zeroOK) || math.IsInf(v, 0) {
			want := "positive and finite"
			if zeroOK {
				want = "zero or more, and finite"
			}
			return fmt.Errorf("$%s (--%s) is %v: it must be %s", env, name, *p, want)
		}
		return nil
	})
}

func kindOf(p any) string {
	switch p.(type) {
	case *time.Duration:
		return "duration such as 2s"
	case *float64:
		return "number"
	}
	return "whole number"
}

// parse parses args and reports environment values that did not parse.
func (s *settings) parse(args []string) error {
	if err := s.fs.Parse(args); err != nil {
		return err
	}
	for _, check := range s.checks {
		if err := check(); err != nil {
			s.bad = append(s.bad, err.Error())
		}
	}
	if len(s.bad) > 0 {
		return fmt.Errorf("%w: %s", errUsage, strings.Join(s.bad, "; "))
	}
	if s.fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, s.fs.Arg(0))
	}
	return nil
}
