// CoreDNS for the test cluster's real node: only the plugins it uses, so the build stays small
// and nothing can forward a query off the machine (no `forward`, no `etcd`, no cloud plugins).
// The directive order is the relative order of CoreDNS v1.15.0's plugin.cfg.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{"bind", "ready", "errors", "log", "cache", "kubernetes"}
}

func main() {
	coremain.Run()
}
