package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/charmbracelet/ssh"
	"github.com/charmbracelet/x/term"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/serve"
	"github.com/lockstep-lab/lockstep/lab/tui"
)

// serveCmd runs lab serve: the terminal lab for a whole room over SSH (lab/serve), the room's
// table on this terminal, until Ctrl-C.
func serveCmd(args []string, stdout, stderr io.Writer) error {
	fl := newFlags("serve", "lab serve [-addr :2222] [-password P] [-max 40] [-idle 30m] [-pause 2m] [-save room.json] [-hostkey FILE] [-speed 10] [-buyers 5] [-stock 100]\n\n"+
		"Serves the terminal lab to a room over SSH: each learner types ssh -p 2222 NAME@HOST and gets a lab of\n"+
		"their own (own Redis, shop and buyers), nothing else (no shell, no commands, no files, no forwarding).\n"+
		"This terminal shows the room: who is on which step, the faults they pressed, what they saw break.\n"+
		"Ctrl-C closes the room. lab class room.json reads a room -save kept.", stderr)
	addr := fl.String("addr", ":2222", "the address to listen on (host:port; :2222 is every interface of this machine)")
	password := fl.String("password", "", "the password every learner types (none: anyone who can reach the port gets a lab)")
	maxN := fl.Int("max", 40, "learners at once (1…1000); past it a newcomer is told the room is full")
	idle := fl.Duration("idle", 30*time.Minute, "end a learner's session after this long without a key (0: never)")
	pause := fl.Duration("pause", 2*time.Minute, "hold a learner's buyers after this long without a key, until their next key (0: never)")
	save := fl.String("save", "", "keep the room in this file, rewritten as it changes (an existing room file is carried on)")
	hostkey := fl.String("hostkey", "", "the SSH host key (default: serve_host_ed25519 in the lockstep folder of your config folder), made if missing")
	slow := fl.Float64("speed", 10, "every lab's slow-down factor (1…100), as lab -speed")
	buyers := fl.Int("buyers", 5, "every lab's live buyers at the start (1…50)")
	stock := fl.Int("stock", 100, "every lab's units on the shelf (1…1000)")
	if err := parse(fl, args); err != nil {
		return err
	}
	switch {
	case *maxN < 1 || *maxN > 1000:
		return usageError("-max %d: want 1…1000", *maxN)
	case *idle < 0 || *pause < 0:
		return usageError("-idle and -pause: want a duration ≥ 0 (30m, 90s; 0 for never)")
	case *slow < 1 || *slow > 100:
		return usageError("-speed %g: want a slow-down factor from 1 to 100", *slow)
	case *buyers < 1 || *buyers > tui.MaxBuyers:
		return usageError("-buyers %d: want 1…%d", *buyers, tui.MaxBuyers)
	case *stock < 1 || *stock > 1000:
		return usageError("-stock %d: want 1…1000", *stock)
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return usageError("-addr %s: want host:port, or :port for every interface", *addr)
	}
	var kept *serve.File
	if *save != "" {
		f, err := serve.ReadFile(*save)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return usageError("-save %v: name another file, nothing was written", err)
		default:
			kept = f
		}
	}
	keyFile := *hostkey
	if keyFile == "" {
		var err error
		if keyFile, err = serve.DefaultHostKey(); err != nil {
			return err
		}
	}
	pem, made, err := serve.HostKey(keyFile)
	if err != nil {
		return err
	}
	drv := &roomDriver{}
	defer drv.close() // after Shutdown below: every learner's drive session has ended
	srv, err := serve.New(serve.Config{Password: *password, Max: *maxN, Idle: *idle, Pause: *pause, HostKey: pem,
		Lab: tui.Options{Slow: *slow, Buyers: *buyers, Stock: *stock, Driver: drv.open}, Room: serve.NewRoom(kept)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if made {
		srv.Room.Logf("made the host key %s", keyFile)
	}
	if kept != nil {
		srv.Room.Logf("carried on the room in %s (%d learners)", *save, len(kept.Learners))
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	sc := serve.Screen{Out: stdout, Save: *save, Head: serveHead(ln.Addr().(*net.TCPAddr), *password != "", srv.Fingerprint(), *maxN, *idle, *save)}
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(f.Fd()) {
		sc.TTY = true
		sc.Width = func() int {
			w, _, err := term.GetSize(f.Fd())
			if err != nil {
				return 100
			}
			return w
		}
	} else {
		for _, l := range sc.Head {
			fmt.Fprintln(stdout, l)
		}
	}
	watched := make(chan error, 1)
	wctx, endWatch := context.WithCancel(context.Background())
	go func() { watched <- srv.Watch(wctx, sc) }()
	select {
	case <-ctx.Done():
	case err = <-served: // the listener failed
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	serr := srv.Shutdown(sctx)
	if err == nil {
		err = <-served
	}
	endWatch()
	werr := <-watched
	if errors.Is(err, ssh.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, serr, werr)
}

// serveHead is what the trainer's screen says above the room: what learners type, what the
// network sees, and how the room ends.
func serveHead(a *net.TCPAddr, password bool, fingerprint string, maxN int, idle time.Duration, save string) []string {
	hosts := []string{a.IP.String()}
	if a.IP.IsUnspecified() {
		hosts = hostAddrs()
	}
	port := fmt.Sprint(a.Port)
	come := fmt.Sprintf("Learners type:  ssh -p %s NAME@%s", port, hosts[0])
	if len(hosts) > 1 {
		come += "   (or @" + strings.Join(hosts[1:], ", @") + ")"
	}
	open := "No password: anyone who can reach port " + port + " gets a lab of their own; nothing else is served (no shell, commands, files or forwarding)."
	if password {
		open = "A password is asked (-password); nothing but the lab is served (no shell, commands, files or forwarding)."
	}
	rest := fmt.Sprintf("Host key %s · at most %d learners", fingerprint, maxN)
	if idle > 0 {
		rest += " · no key for " + course.Span(idle) + " ends a session"
	}
	if save != "" {
		rest += " · the room is kept in " + save
	}
	return []string{"lab serve — " + come, open, rest + " · Ctrl-C closes the room."}
}

// hostAddrs are this machine's addresses a learner can reach, IPv4 first; "HOST" if none.
func hostAddrs() []string {
	var v4, v6 []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			v4 = append(v4, n.IP.String())
		} else {
			v6 = append(v6, n.IP.String())
		}
	}
	if all := append(v4, v6...); len(all) > 0 {
		return all
	}
	return []string{"HOST"}
}
