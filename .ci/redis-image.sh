#!/usr/bin/env bash
# redis-image.sh prepares the container backend on a machine with no image registry (CI): it
# installs docker.io if docker is missing, starts dockerd if no daemon answers, and builds the
# image lockstep-redis:local FROM scratch out of Debian's /usr/bin/redis-server and the libraries
# ldd lists for it. Idempotent: each step is skipped when its result is already there (the image is
# rebuilt only if missing or older than the redis-server binary). Users with a registry need none of
# this: the container backend pulls an official redis:7 image by default.
# Then: LAB_REDIS=container LAB_REDIS_IMAGE=lockstep-redis:local TESTCONTAINERS_RYUK_DISABLED=true
# (Ryuk is testcontainers' reaper, an image this machine cannot pull; the backend removes its own
# containers on Close, on test failure and on CloseAll.)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
tag=${LAB_REDIS_IMAGE:-lockstep-redis:local}

need=()
# a docker client alone (a static binary on PATH) cannot start a daemon: docker.io brings dockerd
if ! docker info >/dev/null 2>&1 && ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  need+=(docker.io)
fi
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]}"
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "== starting dockerd (log: /tmp/dockerd.log)"
  nohup dockerd >/tmp/dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    echo "redis-image.sh: dockerd did not come up; the last lines of /tmp/dockerd.log:" >&2
    tail -n 20 /tmp/dockerd.log >&2
    exit 1
  fi
fi

bin=$(command -v redis-server)
bin=$(readlink -f "$bin")
# The image is kept if it exists, is newer than the redis-server binary, and runs.
if created=$(docker image inspect -f '{{.Created}}' "$tag" 2>/dev/null) &&
  [ "$(date -d "$created" +%s)" -ge "$(stat -c %Y "$bin")" ] &&
  docker run --rm "$tag" redis-server --version >/dev/null 2>&1; then
  echo "== image $tag is up to date"
  exit 0
fi

echo "== building $tag FROM scratch with $bin ($(redis-server --version | cut -d' ' -f3))"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/root/usr/local/bin" "$ctx/root/data" "$ctx/root/tmp"
cp "$bin" "$ctx/root/usr/local/bin/redis-server"
# Every library ldd resolves ("name => /path (addr)") plus the loader ("/lib64/ld-linux… (addr)"),
# copied under their own paths with symlinks followed.
ldd "$bin" | awk '/=> \//{print $3} /^[ \t]*\//{print $1}' | sort -u | while read -r lib; do
  mkdir -p "$ctx/root$(dirname "$lib")"
  cp -L "$lib" "$ctx/root$lib"
done
chmod 1777 "$ctx/root/tmp"
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY root/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
WORKDIR /data
EXPOSE 6379
CMD ["redis-server", "--save", "", "--appendonly", "no", "--protected-mode", "no"]
DOCKERFILE
# The legacy builder: docker.io ships no buildx; its deprecation notice goes to the log.
DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx" >/dev/null 2>"$ctx/build.log" || { cat "$ctx/build.log" >&2; exit 1; }
docker run --rm "$tag" redis-server --version
