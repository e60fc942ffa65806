package review

import (
	"slices"
	"sort"

	"github.com/porthole-dev/porthole/audit"
)

// splitSeries reads each file's chain and first sequence number, and puts
// the files in series, one per chain identity, each in chain order (as
// VerifyWith walks them, so that a call is read before its result); what
// the files hold is not kept: each is read again as it is walked. Each replica writes a chain of its own, so
// one report may cover a deployment's trails, each verified on its own. A
// file's chain is the first one a record of it names. Files that name none
// were written before records did (schema version 1): they belong to the
// only chain when the files name one, the chain they were upgraded into,
// and otherwise form a series of their own.
func splitSeries(paths []string) ([][]*audit.LogFile, error) {
	byChain := map[string][]*audit.LogFile{}
	for _, p := range paths {
		f, _, err := audit.ReadLogFile(p)
		if err != nil {
			return nil, err
		}
		chain, err := seriesChain([]*audit.LogFile{f})
		if err != nil {
			return nil, err
		}
		byChain[chain] = append(byChain[chain], f)
	}
	if unchained, ok := byChain[""]; ok && len(byChain) == 2 {
		delete(byChain, "")
		for chain := range byChain {
			byChain[chain] = append(byChain[chain], unchained...)
		}
	}
	chains := make([]string, 0, len(byChain))
	for chain := range byChain {
		chains = append(chains, chain)
	}
	slices.Sort(chains)
	series := make([][]*audit.LogFile, 0, len(chains))
	for _, chain := range chains {
		files := byChain[chain]
		sort.SliceStable(files, func(i, j int) bool { return files[i].First < files[j].First })
		series = append(series, files)
	}
	return series, nil
}

func pathsOf(files []*audit.LogFile) []string {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	return paths
}
