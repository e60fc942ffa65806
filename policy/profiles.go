package policy

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/temporal/read"
)

// Profile is a disclosure profile as the policy file writes it: per class
// of field (read.Classes), "keep", "pseudonymise" (identifier classes
// only) or "withhold", and the personal-data
// detectors (redact.PersonalKinds) that run on the free text it keeps. A
// class it does not name is kept.
//
//	"profiles": {
//	  "vendor": {"classes": {"free-text": "withhold", "worker-identity": "withhold"}, "personal": ["email"]}
//	}
//
// A grant names its profile ("profile": "vendor"); a grant that names none
// keeps everything and runs no detector beyond those of
// PORTHOLE_REDACT_PERSONAL.
type Profile struct {
	Classes  map[string]string `json:"classes"`
	Personal []string          `json:"personal"`
}

// The choices a profile makes for a class.
const (
	ChoiceKeep         = "keep"
	ChoicePseudonymise = "pseudonymise"
	ChoiceWithhold     = "withhold"
)

// Disclosure is what a caller's profiles make of its answers: the merge of
// the profiles of every grant that matches it (by its principal, its
// scopes, its claims). Each class takes the most restrictive choice among
// them (keep < pseudonymise < withhold) and the detectors are the union
// of theirs. The zero Disclosure is the default: everything kept.
type Disclosure struct {
	// Name names the profiles merged, sorted and joined by "+"; "" for the
	// default.
	Name     string
	Withhold read.ClassSet
	// Pseudonymise are the classes shown as pseudonyms, made with the key
	// of the profile PseudonymKey names (at most one profile that
	// pseudonymises can match a caller: checkPseudonymKeys).
	Pseudonymise read.ClassSet
	PseudonymKey string
	key          string // Key's, made with the disclosure
	// Personal are the personal-data detectors run on kept free text,
	// sorted.
	Personal []string
}

// Default reports whether d keeps everything and runs no detector.
func (d *Disclosure) Default() bool { return d == nil || d.Name == "" }

// Key is d as a cache key: two callers whose disclosures have one key are
// answered alike. "" for the default.
func (d *Disclosure) Key() string {
	if d.Default() {
		return ""
	}
	if d.key == "" { // a Disclosure not made by disclosureOf
		return keyOf(d)
	}
	return d.key
}

func keyOf(d *Disclosure) string {
	return fmt.Sprintf("%x:%x:%s:%s", uint32(d.Withhold), uint32(d.Pseudonymise), d.PseudonymKey, strings.Join(d.Personal, ","))
}

// checkProfiles refuses a profile that names a class porthole does not
// have, a choice other than keep or withhold, a class that cannot be
// withheld, or a detector that does not exist; and a grant that names a
// profile the file does not define.
func (f *File) checkProfiles() error {
	for name, p := range f.Profiles {
		if name == "" || strings.ContainsAny(name, "+\x00") {
			return fmt.Errorf("the policy file's profile name %q is empty or holds a + or a NUL", name)
		}
		for class, choice := range p.Classes {
			if err := checkChoice(name, read.Class(class), choice); err != nil {
				return err
			}
		}
		for _, k := range p.Personal {
			if !slices.Contains(redact.PersonalKinds, k) {
				return fmt.Errorf("the profile %q names the personal-data detector %q, which does not exist (there are %s)", name, k, strings.Join(redact.PersonalKinds, ", "))
			}
		}
	}
	return f.eachGrant(func(whom string, g Grant) error {
		if _, ok := f.Profiles[g.Profile]; g.Profile != "" && !ok {
			return fmt.Errorf("the policy file gives %s the profile %q, which it does not define", whom, g.Profile)
		}
		return nil
	})
}

// checkChoice refuses a profile's choice for a class that porthole does
// not have, that is not one of the three, or that the class cannot take.
func checkChoice(profile string, c read.Class, choice string) error {
	switch {
	case !slices.Contains(read.Classes, c):
		return fmt.Errorf("the profile %q names the class %q, which porthole does not have (there are %s)", profile, c, classList())
	case choice == ChoiceKeep:
	case choice == ChoicePseudonymise && !c.Pseudonymisable():
		return fmt.Errorf("the profile %q pseudonymises the class %s; only identifiers an agent follows a workflow by can be pseudonymised (%s)", profile, c, pseudonymisable())
	case choice == ChoicePseudonymise:
	case choice != ChoiceWithhold:
		return fmt.Errorf("the profile %q says %q for the class %s; a profile says keep, pseudonymise or withhold", profile, choice, c)
	case !c.Withholdable():
		return fmt.Errorf("the profile %q withholds the class %s, which holds only Temporal's fixed words or porthole's own and cannot be withheld", profile, c)
	}
	return nil
}

func pseudonymisable() string {
	var names []string
	for _, c := range read.Classes {
		if c.Pseudonymisable() {
			names = append(names, string(c))
		}
	}
	return strings.Join(names, ", ")
}

func classList() string {
	var names []string
	for _, c := range read.Classes {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

// disclosureOf is the disclosure of the profiles named, merged.
func (f *File) disclosureOf(names []string) *Disclosure {
	d := &Disclosure{}
	var merged []string
	for _, name := range names {
		p, ok := f.Profiles[name]
		if !ok || slices.Contains(merged, name) {
			continue
		}
		merged = append(merged, name)
		for class, choice := range p.Classes {
			switch choice {
			case ChoiceWithhold:
				d.Withhold |= read.Of(read.Class(class))
			case ChoicePseudonymise:
				d.Pseudonymise |= read.Of(read.Class(class))
				d.PseudonymKey = name
			}
		}
		for _, k := range p.Personal {
			if !slices.Contains(d.Personal, k) {
				d.Personal = append(d.Personal, k)
			}
		}
	}
	d.Pseudonymise &^= d.Withhold // withholding is the stricter choice
	if d.Pseudonymise == 0 {
		d.PseudonymKey = ""
	}
	slices.Sort(merged)
	slices.Sort(d.Personal)
	d.Name = strings.Join(merged, "+")
	d.key = keyOf(d)
	return d
}

// profiles holds the file's profiles for Grants: each grant's, and the
// merges made so far.
type profiles struct {
	file *File
	// byGrant is the profile of each grant that names one, keyed as
	// Grants keys its grants ("principal:NAME", "scope:NAME",
	// "claim:NAME\x00VALUE").
	byGrant map[string]string
	// single is the disclosure of each profile alone, the one most
	// callers get, read without a lock; merged those of several, made
	// when first needed.
	single map[string]*Disclosure
	mu     sync.Mutex
	merged map[string]*Disclosure // by the names merged, joined by "+"
}

// DisclosureFor is the disclosure of the caller c: the merge of the
// profiles of every grant that matches it. A nil *Grants (no policy file)
// gives the default.
func (g *Grants) DisclosureFor(c Caller) *Disclosure {
	if g == nil || g.profiles == nil || len(g.profiles.byGrant) == 0 {
		return KeepAll
	}
	p := g.profiles
	var names []string
	add := func(key string) {
		if name := p.byGrant[key]; name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	add("principal:" + c.Principal)
	for _, s := range c.Scopes {
		add("scope:" + s)
	}
	for claim, values := range c.Claims {
		for _, v := range values {
			add("claim:" + claim + "\x00" + v)
		}
	}
	switch len(names) {
	case 0:
		return KeepAll
	case 1:
		return p.single[names[0]]
	}
	slices.Sort(names)
	key := strings.Join(names, "+")
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.merged[key]
	if !ok {
		d = p.file.disclosureOf(names)
		p.merged[key] = d
	}
	return d
}

// KeepAll is the default disclosure, which keeps everything; nothing
// writes to it.
var KeepAll = &Disclosure{}

// Profile is the disclosure of the one profile named, or nil when the file
// defines none of that name.
func (f *File) Profile(name string) *Disclosure {
	if _, ok := f.Profiles[name]; !ok {
		return nil
	}
	return f.disclosureOf([]string{name})
}

// grantPair is two grants that can match one caller, and their profiles.
type grantPair struct{ a, b, profileA, profileB string }

// pairs are the pairs of grants that can match one caller and name
// different profiles. A static token's principal matches its own grant
// only; an OAuth caller can match its principal's grant ("oauth:..."),
// any of the scopes' and any of the claims', but never two principals'.
func (f *File) pairs() []grantPair {
	type grantOf struct {
		whom, profile string
		principal     bool
	}
	var oauth []grantOf
	for name, g := range f.Principals {
		if strings.HasPrefix(name, "oauth:") {
			oauth = append(oauth, grantOf{fmt.Sprintf("the principal %q", name), g.Profile, true})
		}
	}
	for scope, g := range f.Scopes {
		oauth = append(oauth, grantOf{fmt.Sprintf("the scope %q", scope), g.Profile, false})
	}
	for claim, values := range f.Claims {
		for value, g := range values {
			oauth = append(oauth, grantOf{fmt.Sprintf("the claim %s=%q", claim, value), g.Profile, false})
		}
	}
	slices.SortFunc(oauth, func(a, b grantOf) int { return strings.Compare(a.whom, b.whom) })
	var out []grantPair
	for i, a := range oauth {
		for _, b := range oauth[i+1:] {
			if a.profile != b.profile && !(a.principal && b.principal) {
				out = append(out, grantPair{a.whom, b.whom, a.profile, b.profile})
			}
		}
	}
	return out
}

// Merges says, for each pair of grants that can match one caller and name
// different profiles, what that caller gets: one sentence each, sorted.
func (f *File) Merges() []string {
	var out []string
	for _, p := range f.pairs() {
		d := f.disclosureOf([]string{p.profileA, p.profileB})
		out = append(out, fmt.Sprintf("a caller matched by %s (profile %s) and %s (profile %s) gets %s", p.a, profileName(p.profileA), p.b, profileName(p.profileB), d.Describe()))
	}
	return out
}

// checkPseudonymKeys refuses two profiles that pseudonymise and can match
// one caller: the key a caller's pseudonyms are made with must never
// depend on which of its grants a merge took it from.
func (f *File) checkPseudonymKeys() error {
	for _, p := range f.pairs() {
		if f.pseudonymises(p.profileA) && f.pseudonymises(p.profileB) {
			return fmt.Errorf("the profiles %q and %q both pseudonymise, and a caller matched by %s and %s would have both: a caller's pseudonyms must come from one profile's key, so give such grants one profile", p.profileA, p.profileB, p.a, p.b)
		}
	}
	return nil
}

func (f *File) pseudonymises(profile string) bool {
	for _, choice := range f.Profiles[profile].Classes {
		if choice == ChoicePseudonymise {
			return true
		}
	}
	return false
}

func profileName(name string) string {
	if name == "" {
		return "default"
	}
	return fmt.Sprintf("%q", name)
}

// Describe says what d discloses, in a sentence's words: the profiles
// merged, the classes withheld and the detectors run.
func (d *Disclosure) Describe() string {
	if d.Default() {
		return "the default profile: every class kept"
	}
	s := "the profile " + d.Name
	if strings.Contains(d.Name, "+") {
		s = "the profiles " + d.Name + " merged"
	}
	var parts []string
	if d.Withhold != 0 {
		parts = append(parts, d.Withhold.String()+" withheld")
	}
	if d.Pseudonymise != 0 {
		parts = append(parts, d.Pseudonymise.String()+" pseudonymised (the profile "+d.PseudonymKey+"'s key)")
		if !d.Withhold.Has(read.ClassFreeText) {
			parts = append(parts, "the real values an answer shows as pseudonyms replaced by them in its free text")
		}
		if !d.Withhold.Has(read.ClassUpstreamText) {
			parts = append(parts, "upstream answers kept whole, not pseudonymised")
		}
	}
	if len(parts) == 0 {
		s += ": every class kept"
	} else {
		s += ": " + strings.Join(parts, "; ")
	}
	if len(d.Personal) > 0 {
		s += "; detectors " + strings.Join(d.Personal, ", ") + " on free text"
	}
	return s
}

// grantProfiles is each grant's profile, keyed as DisclosureFor looks them
// up.
func (f *File) grantProfiles() *profiles {
	p := &profiles{file: f, byGrant: map[string]string{}, single: map[string]*Disclosure{}, merged: map[string]*Disclosure{}}
	for name := range f.Profiles {
		p.single[name] = f.disclosureOf([]string{name})
	}
	for name, g := range f.Principals {
		if g.Profile != "" {
			p.byGrant["principal:"+name] = g.Profile
		}
	}
	for scope, g := range f.Scopes {
		if g.Profile != "" {
			p.byGrant["scope:"+scope] = g.Profile
		}
	}
	for claim, values := range f.Claims {
		for value, g := range values {
			if g.Profile != "" {
				p.byGrant["claim:"+claim+"\x00"+value] = g.Profile
			}
		}
	}
	return p
}
