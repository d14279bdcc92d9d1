// Command coredns is CoreDNS with only the plugins the local cluster's Corefile uses
// (devcluster/realnodes/addons.py), the way CoreDNS documents custom builds: the full plugin set
// takes several times as long to compile, for DNS that answers cluster.local and nothing else.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
	"github.com/coredns/coredns/coremain"
)

// The plugins in CoreDNS's own execution order (its plugin.cfg), which a Corefile does not change.
var directives = []string{"ready", "health", "errors", "loadbalance", "cache", "kubernetes"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
