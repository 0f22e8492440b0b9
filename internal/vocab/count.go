package vocab

import "strconv"

// Count is n with its noun: "1 order", "3 orders", "0 orders". Every count the lab says goes
// through it, so none says "1 orders" or "order(s)".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
