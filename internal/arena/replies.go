package arena

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/redis/go-redis/v9"
)

// replyErrors sets, on hc (cmds' payload as the history keeps it), each error the server replied
// to one of cmds with (unknown command, EXECABORT, WRONGTYPE, NOSCRIPT, a script's error: never a
// network's, nor a nil), and, if there was one, asks e's server (once a command name) which of
// those commands it does not run, and its name and version: what the referee says them with.
// sent is what sending them answered: a single command's error is set on it only once the hooks
// have returned. The caller holds e's turn.
func (a *Arena) replyErrors(ctx context.Context, e *nodeEye, cmds []redis.Cmder, sent error, hc []history.Cmd) (server string, lacks []string) {
	var ask, failed []string
	single := len(cmds) == 1
	for i, c := range payload(cmds) {
		err := c.Err()
		if err == nil && single {
			err = sent
		}
		var re redis.Error
		var refused *redisenv.Refusal
		if err == nil || err == redis.Nil || !errors.As(err, &re) || errors.As(err, &refused) {
			continue // no reply, or the lab's guard's, not the server's
		}
		hc[i].Err = re.Error()
		name := strings.ToUpper(c.Name())
		failed = append(failed, name)
		if _, asked := e.lacks[name]; !asked && !slices.Contains(ask, name) {
			ask = append(ask, name)
		}
	}
	if len(failed) == 0 {
		return "", nil
	}
	if len(ask) > 0 || e.server == "" {
		no, name, err := e.node.Lacks(context.WithoutCancel(ctx), ask)
		if err == nil {
			if e.lacks == nil {
				e.lacks = map[string]bool{}
			}
			for _, c := range ask {
				e.lacks[c] = slices.Contains(no, c) || slices.Contains(no, strings.ToLower(c))
			}
			if name != "" {
				e.server = name
			}
		}
	}
	for _, c := range failed {
		if e.lacks[c] && !slices.Contains(lacks, c) {
			lacks = append(lacks, c)
		}
	}
	return e.server, lacks
}
