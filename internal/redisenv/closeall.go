package redisenv

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// open holds every Env of this package that owns something outside the process (server processes,
// keys on a shared server), for CloseAll.
var open struct {
	sync.Mutex
	envs map[io.Closer]struct{}
	gen  uint64 // how many times CloseAll has started
}

// reopenAfterCloseAll lets tests open backends again after a test called CloseAll.
var reopenAfterCloseAll atomic.Bool

// closeAllGen is how many times CloseAll has started; an Env that takes it before it starts
// anything can tell, with registerSince, whether a CloseAll ran meanwhile.
func closeAllGen() uint64 {
	open.Lock()
	defer open.Unlock()
	return open.gen
}

// registerSince registers c unless CloseAll has started since closeAllGen returned gen.
func registerSince(c io.Closer, gen uint64) bool {
	open.Lock()
	defer open.Unlock()
	if open.gen != gen {
		return false
	}
	if open.envs == nil {
		open.envs = map[io.Closer]struct{}{}
	}
	open.envs[c] = struct{}{}
	return true
}

func register(c io.Closer) {
	open.Lock()
	defer open.Unlock()
	if open.envs == nil {
		open.envs = map[io.Closer]struct{}{}
	}
	open.envs[c] = struct{}{}
}

func unregister(c io.Closer) {
	open.Lock()
	defer open.Unlock()
	delete(open.envs, c)
}

// CloseAll closes every server, container and url Env still open: a program calls it from its
// SIGINT/SIGTERM handler (and may defer it in main) so no redis-server, container, temp dir or
// prefixed key outlives it. A server or container Env still starting is waited for and removed;
// one whose Open began before CloseAll and had started nothing yet fails instead, and so does
// every later server or container Open: the program is taken to be exiting (the Docker daemon
// would finish creating a container whose client exited mid-request; a temp dir would stay).
// Hazard: a run still using one of those Envs sees its commands fail.
func CloseAll() error {
	open.Lock()
	open.gen++
	envs := make([]io.Closer, 0, len(open.envs))
	for c := range open.envs {
		envs = append(envs, c)
	}
	open.Unlock()
	var errs []error
	for _, c := range envs {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
