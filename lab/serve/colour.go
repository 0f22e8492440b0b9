package serve

import (
	"io"
	"slices"

	"github.com/charmbracelet/colorprofile"
)

// colourWriter is w for a terminal of type term: the lab draws in 256 colours (New sets
// lipgloss's renderer so), which a terminal of 256 or more shows as they are; for one of 16
// colours each is brought down to the nearest of those, and for one without colour (or a TERM
// that says nothing) they are left out, bold and reverse kept. Hazard: the frames of those
// terminals are parsed on their way out, a cost the others do not pay.
func colourWriter(w io.Writer, term string, environ []string) io.Writer {
	p := colorprofile.Env(append(slices.Clone(environ), "TERM="+term))
	switch {
	case p >= colorprofile.ANSI256:
		return w
	case p < colorprofile.ASCII: // a dumb terminal still takes the cursor's moves
		p = colorprofile.ASCII
	}
	return &colorprofile.Writer{Forward: w, Profile: p}
}
