package page

import (
	"strings"
	"testing"
)

// TestNothingEndsAnElementEarly: the page's script and style, laid inline, hold no closing tag of
// their own element.
func TestNothingEndsAnElementEarly(t *testing.T) {
	if strings.Contains(pageJS, "</script") || strings.Contains(pageCSS, "</style") {
		t.Error("the page's script or style would end its element early")
	}
}
