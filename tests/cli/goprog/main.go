// Command goprog writes one profile of each kind runtime/pprof offers into
// a directory, from functions with known names, for the cprof command's
// tests to read next to `go tool pprof` (tests/cli/make_go_profiles.sh
// builds and runs it). Standard library only, so it builds offline.
//
//	goprog [-cpu 1s] DIR
//
// writes DIR/cpu.pb.gz, heap.pb.gz, allocs.pb.gz, goroutine.pb.gz,
// block.pb.gz, mutex.pb.gz and threadcreate.pb.gz, gzipped as Go writes
// them. The names the tests look for:
//
//	cpu:       main.cpuHeavy (about 2/3 of the time), main.cpuLight (1/3),
//	           the generic main.cpuGeneric[...] inside main.cpuLight
//	heap:      main.allocKeep (live), main.(*store).grow (live)
//	allocs:    main.allocTemp (allocated and dropped), and the two above
//	goroutine: main.parked (goroutines waiting on a channel)
//	block:     main.blockOnChannel (receives that wait for a sender)
//	mutex:     main.holdMutex (the holder, who unlocks a contended mutex)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// Every allocation of 512 bytes on average is sampled: enough samples from
// a small program, and a rate the heap profile reports (Go scales its
// values by it, which the cprof command must do the same way).
func init() { runtime.MemProfileRate = 512 }

var sink uint64

// spin does n rounds of arithmetic the compiler cannot drop.
//
//go:noinline
func spin(n int) uint64 {
	x := sink | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

//go:noinline
func cpuHeavy() { sink += spin(2_000_000) }

// cpuGeneric's name in the profile carries brackets: main.cpuGeneric[...].
//
//go:noinline
func cpuGeneric[T int | int64](n T) { sink += spin(int(n)) }

//go:noinline
func cpuLight() { cpuGeneric(1_000_000) }

func cpuProfile(path string, d time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
		cpuHeavy()
		cpuLight()
	}
	pprof.StopCPUProfile()
	return f.Close()
}

var kept [][]byte

// last keeps allocTemp's blocks escaping to the heap, one at a time.
var last []byte

//go:noinline
func allocKeep() {
	for i := 0; i < 2000; i++ {
		kept = append(kept, make([]byte, 4096))
	}
}

//go:noinline
func allocTemp() {
	for i := 0; i < 20000; i++ {
		last = make([]byte, 1024)
	}
	last = nil
}

type store struct{ items []*[256]byte }

//go:noinline
func (s *store) grow(n int) {
	for i := 0; i < n; i++ {
		s.items = append(s.items, new([256]byte))
	}
}

var keptStore = &store{}

func parked(wait <-chan struct{}, ready *sync.WaitGroup) {
	ready.Done()
	<-wait
}

// blockOnChannel receives five values a sender sends 2 ms apart, so each
// receive blocks.
//
//go:noinline
func blockOnChannel() {
	c := make(chan int)
	go func() {
		for i := 0; i < 5; i++ {
			time.Sleep(2 * time.Millisecond)
			c <- i
		}
	}()
	for i := 0; i < 5; i++ {
		<-c
	}
}

// holdMutex keeps mu for 1 ms at a time while others wait for it; Go
// charges a contended mutex's delay to the stack that unlocks it.
//
//go:noinline
func holdMutex(mu *sync.Mutex) {
	for i := 0; i < 10; i++ {
		mu.Lock()
		time.Sleep(time.Millisecond)
		mu.Unlock()
	}
}

func contend() {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holdMutex(&mu)
		}()
	}
	wg.Wait()
}

func writeProfile(dir, name, file string) error {
	f, err := os.Create(filepath.Join(dir, file))
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		return err
	}
	return f.Close()
}

func run(dir string, cpu time.Duration) error {
	if err := cpuProfile(filepath.Join(dir, "cpu.pb.gz"), cpu); err != nil {
		return err
	}

	allocKeep()
	allocTemp()
	keptStore.grow(4000)
	// The heap profile shows the heap as of the last completed collection.
	runtime.GC()
	if err := writeProfile(dir, "heap", "heap.pb.gz"); err != nil {
		return err
	}
	if err := writeProfile(dir, "allocs", "allocs.pb.gz"); err != nil {
		return err
	}

	wait := make(chan struct{})
	var ready sync.WaitGroup
	for i := 0; i < 5; i++ {
		ready.Add(1)
		go parked(wait, &ready)
	}
	ready.Wait()
	err := writeProfile(dir, "goroutine", "goroutine.pb.gz")
	close(wait)
	if err != nil {
		return err
	}

	runtime.SetBlockProfileRate(1)
	blockOnChannel()
	runtime.SetBlockProfileRate(0)
	if err := writeProfile(dir, "block", "block.pb.gz"); err != nil {
		return err
	}

	// The fraction stays set while the profile is written: Go scales the
	// recorded delays by it then, and by 0 would give an empty profile.
	runtime.SetMutexProfileFraction(1)
	contend()
	err = writeProfile(dir, "mutex", "mutex.pb.gz")
	runtime.SetMutexProfileFraction(0)
	if err != nil {
		return err
	}

	runtime.KeepAlive(kept)
	return writeProfile(dir, "threadcreate", "threadcreate.pb.gz")
}

func main() {
	cpu := flag.Duration("cpu", time.Second, "how long the CPU profile runs")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: goprog [-cpu 1s] DIR")
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *cpu); err != nil {
		fmt.Fprintln(os.Stderr, "goprog:", err)
		os.Exit(1)
	}
}
