package redisenv

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestWaitReadyRefusesAStranger: a program that took the node's port and answers PING must not
// pass for the node's own redis-server.
func TestWaitReadyRefusesAStranger(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go strangeRedis(c)
		}
	}()
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start a process: ", err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	p := &proc{name: "test", address: ln.Addr().String(), cmd: cmd, out: &tail{}, exited: make(chan struct{})}
	if err := p.waitReady(context.Background()); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("waitReady accepted a stranger's PONG: %v", err)
	}
}

// strangeRedis answers PING with PONG and INFO with some other process's id.
func strangeRedis(c net.Conn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	for {
		peek, err := rd.Peek(1)
		if err != nil {
			return
		}
		if peek[0] != '*' { // an inline command
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			if strings.HasPrefix(strings.ToUpper(line), "PING") {
				c.Write([]byte("+PONG\r\n"))
			}
			continue
		}
		args, err := readReply(rd)
		if err != nil || len(args) == 0 {
			return
		}
		switch strings.ToUpper(args[0]) {
		case "INFO":
			info := "# Server\r\nprocess_id:1\r\n"
			c.Write([]byte("$" + strconv.Itoa(len(info)) + "\r\n" + info + "\r\n"))
		case "PING":
			c.Write([]byte("+PONG\r\n"))
		default:
			c.Write([]byte("-ERR unknown command\r\n"))
		}
	}
}

// TestClaimForgetsClosed: a claimed connection's local address is the lab's while it is open, and
// no longer once it is closed: the next connection on that port may be a stranger's.
func TestClaimForgetsClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	if claimedAddr(addr) {
		t.Fatal("an unclaimed connection is taken for the lab's")
	}
	Claim(c)
	if !claimedAddr(addr) {
		t.Error("a claimed open connection is not the lab's")
	}
	c.Close()
	if claimedAddr(addr) {
		t.Error("a claimed connection, closed, is still the lab's")
	}
}
