//go:build unix

package redisenv

import (
	"net"
	"syscall"
	"testing"
)

// TestClaimOfAPortSharedWithAnotherServer: the kernel may give one local port to two connections
// of the lab's, to two servers; the one to the first is still the lab's after the one to the
// second has closed (CI's server and Sentinel stages named it a stranger: "a client at … the lab
// did not hand out sent commands to the lock (the last: eval)").
//
// Unix only: it sets SO_REUSEADDR on a raw descriptor, which is a syscall.Handle on Windows.
func TestClaimOfAPortSharedWithAnotherServer(t *testing.T) {
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		lns[i] = ln
	}
	reuse := func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1) }); err != nil {
			return err
		}
		return serr
	}
	d := net.Dialer{Control: reuse, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
	a, err := d.Dial("tcp", lns[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	d.LocalAddr = a.LocalAddr()
	b, err := d.Dial("tcp", lns[1].Addr().String())
	if err != nil {
		t.Skipf("this kernel gives no second connection on port %s: %v", a.LocalAddr(), err)
	}
	Claim(a)
	Claim(b)
	b.Close()
	if lab, closed := claimedAddr(a.LocalAddr().String(), lns[0].Addr().String()); !lab || closed {
		t.Errorf("the open connection to the first server, its port shared with a closed one to the second: lab %v, closed %v; want true, false", lab, closed)
	}
	if lab, closed := claimedAddr(b.LocalAddr().String(), lns[1].Addr().String()); lab || !closed {
		t.Errorf("the closed connection to the second server: lab %v, closed %v; want false, true", lab, closed)
	}
}
