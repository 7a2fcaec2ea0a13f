// The paused-holder story in Go: a holder is stopped (SIGSTOP: think of a long GC pause, a
// stuck disk, a VM migration) past its TTL, the lock goes to another session with a larger
// token, and the resource -- here a key written with a fence -- refuses the first holder's
// late write when it wakes up.
//
//	PALISADE_ENDPOINTS=http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003 \
//	    go run ./examples/paused-holder
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	palisade "palisade/client"
)

const (
	lockName = "reports/nightly"
	output   = "reports/nightly/output"
)

func endpoints() []string {
	if e := os.Getenv("PALISADE_ENDPOINTS"); e != "" {
		return strings.Split(e, ",")
	}
	return []string{"http://127.0.0.1:7001", "http://127.0.0.1:7002", "http://127.0.0.1:7003"}
}

// holder is the first holder, in a process of its own so that it can really be paused. It
// writes when told to, whatever it believes: the fence is what must refuse it.
func holder() error {
	ctx := context.Background()
	c, err := palisade.New(palisade.Config{Endpoints: endpoints()})
	if err != nil {
		return err
	}
	s, err := palisade.NewSession(ctx, c, palisade.WithTTL(2*time.Second), palisade.WithLabel("paused-holder"))
	if err != nil {
		return err
	}
	m := palisade.NewMutex(s, lockName)
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.Lock(wait); err != nil {
		return err
	}
	fmt.Println(m.Token())
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil { // told to write: it may have been paused a long time
		return err
	}
	if m.Held() {
		fmt.Println("held")
	} else {
		fmt.Println("lost")
	}
	// Its session is gone; a new one writes with the old token.
	s2, err := palisade.NewSession(ctx, c, palisade.WithLabel("paused-holder, later"))
	if err != nil {
		return err
	}
	defer s2.Close()
	_, err = s2.Put(ctx, output, []byte("late write by the paused holder"), palisade.WithFence(m.Fence()))
	var perr *palisade.Error
	switch {
	case err == nil:
		fmt.Println("accepted")
	case errors.As(err, &perr) && perr.Code == "FENCED":
		fmt.Println("fenced", perr.CurrentToken)
	default:
		return err
	}
	return nil
}

func run() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	child := exec.Command(self, "--holder")
	child.Stderr = os.Stderr
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		return 1, err
	}
	defer func() {
		_ = child.Process.Signal(syscall.SIGCONT)
		_ = child.Process.Kill()
		_ = child.Wait()
	}()
	lines := bufio.NewReader(stdout)
	readLine := func() string { l, _ := lines.ReadString('\n'); return strings.TrimSpace(l) }
	first, err := strconv.ParseUint(readLine(), 10, 64)
	if err != nil {
		return 1, fmt.Errorf("the holder did not get the lock")
	}
	fmt.Printf("paused holder has the lock, token %d\n", first)
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		return 1, err
	}
	fmt.Println("the holder is paused (SIGSTOP); it still believes it holds the lock")

	ctx := context.Background()
	c, err := palisade.New(palisade.Config{Endpoints: endpoints()})
	if err != nil {
		return 1, err
	}
	s, err := palisade.NewSession(ctx, c, palisade.WithLabel("second-holder"))
	if err != nil {
		return 1, err
	}
	defer s.Close()
	m := palisade.NewMutex(s, lockName)
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.Lock(wait); err != nil {
		return 1, err
	}
	fmt.Printf("second holder has the lock, token %d (the paused holder's session expired)\n", m.Token())
	if _, err := s.Put(ctx, output, []byte("written by the second holder"), palisade.WithFence(m)); err != nil {
		return 1, err
	}
	_ = child.Process.Signal(syscall.SIGCONT)
	fmt.Fprintln(stdin, "write")
	belief := readLine()
	state := "NOT closed"
	if belief == "lost" {
		state = "closed"
	}
	fmt.Printf("the holder resumes: its Lost() channel is %s -- a careful holder stops here\n", state)
	outcome := readLine()
	if outcome == "accepted" {
		fmt.Println("BUG: the late write was accepted")
		return 1, nil
	}
	fmt.Printf("late write refused: FENCED (the lock's token is now %s)\n", strings.TrimPrefix(outcome, "fenced "))
	if err := m.Unlock(ctx); err != nil {
		return 1, err
	}
	if belief != "lost" {
		return 1, nil
	}
	return 0, nil
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--holder" {
		if err := holder(); err != nil {
			fmt.Fprintln(os.Stderr, "holder:", err)
			os.Exit(1)
		}
		return
	}
	code, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
