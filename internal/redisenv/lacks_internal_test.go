package redisenv

import "testing"

// TestServerName: a server is named from INFO server as a reason can say it. Valkey reports a
// redis_version too (7.2.4, for old clients), which must not name it.
func TestServerName(t *testing.T) {
	for _, c := range []struct{ info, want string }{
		{"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n", "Redis 7.0.15"},
		{"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.0.0\r\n", "Valkey 9.0.0"},
		{"# Server\r\n", "a server of unknown version"},
	} {
		if got := serverName(c.info); got != c.want {
			t.Errorf("serverName(%q) = %q; want %q", c.info, got, c.want)
		}
	}
}
