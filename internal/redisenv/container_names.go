package redisenv

import "errors"

// ErrNoDocker is what Open wraps for the container backend when no Docker daemon answers; the
// reason follows it on the same line.
var ErrNoDocker = errors.New("redisenv: the container backend needs a running Docker daemon")

// DefaultImage is the container backend's image when $LAB_REDIS_IMAGE is empty: an official
// Redis 7 image, pulled from Docker Hub on first use.
const DefaultImage = "redis:7"

// ContainerLabel marks every container the backend starts (value: the run's prefix), so
// `docker ps -a --filter label=org.lockstep-lab.run` lists any a killed program left behind.
const ContainerLabel = "org.lockstep-lab.run"

// ErrNoContainerBackend is what Open answers for the container backend in a build without it: the
// container backend (testcontainers-go and a Docker client, a third of the lab's code to compile
// and link) is built only with -tags container.
var ErrNoContainerBackend = errors.New("redisenv: this build has no container backend: build with -tags container (go run -tags container ./lab …, go test -tags container …)")
