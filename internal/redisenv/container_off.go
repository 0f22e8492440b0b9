//go:build !container

package redisenv

// openContainer is Open's container backend, which this build leaves out: it says how to build it.
func openContainer(int) (Env, error) { return nil, ErrNoContainerBackend }
