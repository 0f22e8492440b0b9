// Package page writes a run you can share: run, matrix, grade, judge, explore and class write,
// with -html FILE, one self-contained HTML page (its script and style inline, the history inside
// it), and read a page back. What a page says of a verdict comes from lab/course and lab/picture,
// the same words and marks the terminal lab draws, so the page and the terminal cannot disagree;
// it must not import lab/tui. Hazard: a page is opened years later, offline: it loads nothing.
package page
