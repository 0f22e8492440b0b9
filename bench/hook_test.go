package bench

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// counter is a go-redis hook that counts every command a client sends: one per ProcessHook call,
// and one per command of a pipeline. A script run that falls back from EVALSHA to EVAL counts 2.
// One counter may be shared by many clients.
type counter struct {
	n atomic.Int64

	mu    sync.Mutex
	names []string // command names, while record is set (TestRoundTrips only)
	rec   atomic.Bool
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		if c.rec.Load() {
			c.note(cmd)
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		if c.rec.Load() {
			for _, cmd := range cmds {
				c.note(cmd)
			}
		}
		return next(ctx, cmds)
	}
}

func (c *counter) note(cmd redis.Cmder) {
	c.mu.Lock()
	c.names = append(c.names, cmd.Name())
	c.mu.Unlock()
}

// take returns the names recorded since the last take and forgets them.
func (c *counter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.names
	c.names = nil
	return n
}

// newClient returns a client of the redis-server at addr whose commands c counts.
func newClient(addr string, c *counter) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	rdb.AddHook(c)
	return rdb
}
