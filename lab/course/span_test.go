package course

import (
	"testing"
	"time"
)

func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{30 * time.Minute: "30m", 90 * time.Minute: "1h30m", 2 * time.Hour: "2h",
		125 * time.Second: "2m5s", 300 * time.Millisecond: "300ms", 45 * time.Second: "45s", 0: "0s", 10 * time.Second: "10s", time.Hour + 10*time.Second: "1h0m10s"} {
		if got := Span(d); got != want {
			t.Errorf("Span(%v) = %q, want %q", d, got, want)
		}
	}
}
