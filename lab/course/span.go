package course

import (
	"strings"
	"time"
)

// Span is d as the lab says a span of the wall clock: "30m", "1h30m", "90ms", "2m5s", with no
// zero unit, so the flags' 30m reads back as 30m and not time's "30m0s".
func Span(d time.Duration) string {
	s := d.String()
	if d >= time.Minute && strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
	}
	return s
}
