package vocab

import "testing"

// TestCount: one takes the singular, every other count (none included) the plural.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 orders"}, {1, "1 order"}, {2, "2 orders"}, {21, "21 orders"}} {
		if got := Count(c.n, "order", "orders"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
