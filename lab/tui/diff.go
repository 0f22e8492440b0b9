package tui

// diffOp is one line of a line diff: ' ' kept, '+' added, '-' removed.
type diffOp struct {
	op   byte
	text string
}

// lineDiff returns the shortest edit from a to b as whole lines, by longest common subsequence.
// The step files are a few hundred lines at most, so the quadratic table is fine.
func lineDiff(a, b []string) []diffOp {
	// Trim the common head and tail first: most of a step's file is unchanged.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(am), len(bm)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if am[i] == bm[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	ops := make([]diffOp, 0, len(a)+len(b))
	for _, s := range a[:pre] {
		ops = append(ops, diffOp{' ', s})
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && am[i] == bm[j]:
			ops = append(ops, diffOp{' ', am[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', am[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', bm[j]})
			j++
		}
	}
	for _, s := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', s})
	}
	return ops
}
