package lock

import "embed"

// Source is this step's own code, for the lab's code pane.
//
//go:embed lock.go aspect.go order.go lock.lua unlock.lua renew.lua
var Source embed.FS
