package picture

import (
	"fmt"
	"strings"
)

// Colour is how a stretch of kind k looks: Term, the terminal's 256-colour index, and Page, the
// page's CSS colour. The terminal (lab/tui's styles) and the page (its CSS variables) both take
// their lanes' colours from here, so one colour means one thing in both legends. Hazard: a lock's
// holds (Held) are the holding blue on both, whoever holds it (the page tells holders apart by
// label and shade, never by a colour another state has).
type Colour struct{ Term, Page string }

// Colours is the table, by kind.
var Colours = [...]Colour{
	Wait:    {"243", "#e3e7ec"},
	Work:    {"150", "#c5e1a5"},
	Hold:    {"39", "#64a0dc"},
	Inside:  {"42", "#7cc47f"},
	Overlap: {"196", "#e53935"},
	Cut:     {"214", "#ffc677"},
	Frozen:  {"141", "#b8a6dc"},
	Dead:    {"248", "#b0b6bc"},
	Held:    {"39", "#64a0dc"},
}

// HeldShades are the page's two shades of the holding blue a lock node's holds alternate
// between, so that two holds side by side read as two.
var HeldShades = [2]string{"#9ecae1", "#c6dbef"}

// CSSVars is the page's colour variables: "--wait: #e3e7ec; …" (Kind.Class names them).
func CSSVars() string {
	var b strings.Builder
	for k, c := range Colours {
		fmt.Fprintf(&b, "--%s: %s; ", Kind(k).Class(), c.Page)
	}
	for i, c := range HeldShades {
		fmt.Fprintf(&b, "--own%d: %s; ", i+1, c)
	}
	return strings.TrimSpace(b.String())
}
