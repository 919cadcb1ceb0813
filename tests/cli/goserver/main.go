// A Go program serving net/http/pprof, as the services of the seed's Parca
// set-up do, for tests/cli/collect_run.sh: cprof collect scrapes it beside
// cprof's own demo programs. It listens on the address given (port 0: any
// free one), prints "serving http://ADDR/debug/pprof/" once it does, and
// keeps a little CPU, memory, lock and channel work going so that every
// profile has samples.
package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
	"time"
)

var sink []byte

func burn() {
	x := 0
	for {
		for i := 0; i < 1000000; i++ {
			x += i * i
		}
		time.Sleep(time.Millisecond)
	}
}

func churn() {
	for {
		sink = make([]byte, 64<<10)
		time.Sleep(5 * time.Millisecond)
	}
}

func contend() {
	var mu sync.Mutex
	for i := 0; i < 2; i++ {
		go func() {
			for {
				mu.Lock()
				time.Sleep(time.Millisecond)
				mu.Unlock()
			}
		}()
	}
}

func main() {
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	l, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go burn()
	go churn()
	contend()
	fmt.Printf("serving http://%s/debug/pprof/\n", l.Addr())
	os.Stdout.Sync()
	fmt.Fprintln(os.Stderr, http.Serve(l, nil))
}
