package redisenv

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/redis/go-redis/v9"
)

// askLacks asks c's server which of cmds it does not run, with COMMAND INFO (which answers nil
// for a command it does not know and changes nothing), and names the server from INFO server
// ("Redis 7.0.15", "Valkey 9.0.0"). Hazard: a server that renames or forbids COMMAND (an ACL
// without @connection) answers an error, and so does askLacks: it cannot tell, and does not guess.
func askLacks(ctx context.Context, c *redis.Client, cmds []string) (lacks []string, server string, err error) {
	if len(cmds) == 0 {
		return nil, "", nil
	}
	args := []any{"COMMAND", "INFO"}
	for _, cmd := range cmds {
		args = append(args, strings.ToLower(cmd))
	}
	reply, err := c.Do(ctx, args...).Slice()
	if err != nil {
		return nil, "", fmt.Errorf("redisenv: asking the server which commands it runs (COMMAND INFO): %w", err)
	}
	if len(reply) != len(cmds) {
		return nil, "", fmt.Errorf("redisenv: COMMAND INFO answered %d entries for %d commands", len(reply), len(cmds))
	}
	for i, r := range reply {
		if r == nil {
			lacks = append(lacks, cmds[i])
		}
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return nil, "", fmt.Errorf("redisenv: asking the server its version (INFO server): %w", err)
	}
	return lacks, serverName(info), nil
}

// serverName names a server from its INFO server section: "Valkey 9.0.0" (Valkey also reports a
// redis_version, for old clients: 7.2.4), "Redis 7.0.15", or "a server of unknown version".
func serverName(info string) string {
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	switch {
	case fields["valkey_version"] != "":
		return "Valkey " + fields["valkey_version"]
	case fields["redis_version"] != "":
		return "Redis " + fields["redis_version"]
	}
	return "a server of unknown version"
}

// miniredisName names the embedded server with the miniredis version this program was built with.
func miniredisName() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/alicebob/miniredis/v2" {
				return "miniredis " + m.Version
			}
		}
	}
	return "miniredis"
}
