package scenario_test

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

func needServer(t *testing.T) *redisenv.Server {
	t.Helper()
	s, err := redisenv.NewServer()
	if errors.Is(err, redisenv.ErrNoRedisServer) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var catalogFind = catalog.Find
