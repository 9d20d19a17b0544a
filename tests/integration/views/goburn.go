// A tiny Go program whose CPU profile the views tests read: three functions
// burn CPU in the proportions 1:2:3 under pprof labels route=/a, /b, /c
// (alpha under /a, beta under /b, gamma under /c), and gamma recurses once.
// With HEAP.pprof it also writes a heap profile (four sample types) of
// hoard's allocations; with BLOCK.pprof and MUTEX.pprof, Go's block and
// mutex profiles of a wait: waiter blocks 3 x 100 ms receiving from a
// channel, and locker blocks about 200 ms in sync.(*Mutex).Lock while
// holder keeps the mutex (the mutex profile charges holder's Unlock).
//
//	go run goburn.go OUT.pprof [SECONDS [HEAP.pprof [BLOCK.pprof MUTEX.pprof]]]
package main

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

var sink uint64

//go:noinline
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := sink
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

//go:noinline
func alpha(d time.Duration) { spin(d) }

//go:noinline
func beta(d time.Duration) { spin(d) }

//go:noinline
func gamma(d time.Duration, depth int) {
	if depth > 0 {
		gamma(d, depth-1)
		return
	}
	spin(d)
}

var kept [][]byte

//go:noinline
func hoard(n int) {
	for i := 0; i < n; i++ {
		kept = append(kept, make([]byte, 1024+i%4096))
	}
}

//go:noinline
func waiter(c chan int) {
	for i := 0; i < 3; i++ {
		<-c
	}
}

var mu sync.Mutex

//go:noinline
func holder(held chan struct{}) {
	mu.Lock()
	close(held)
	time.Sleep(200 * time.Millisecond)
	mu.Unlock()
}

//go:noinline
func locker() {
	mu.Lock()
	mu.Unlock()
}

// waits makes the block and mutex profiles' events.
func waits() {
	c := make(chan int)
	go func() {
		for i := 0; i < 3; i++ {
			time.Sleep(100 * time.Millisecond)
			c <- i
		}
	}()
	waiter(c)
	held := make(chan struct{})
	done := make(chan struct{})
	go func() { holder(held); close(done) }()
	<-held
	locker()
	<-done
}

func write(name, path string) {
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
}

func main() {
	runtime.MemProfileRate = 4096
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	secs := 1.2
	if len(os.Args) > 2 {
		if secs, err = strconv.ParseFloat(os.Args[2], 64); err != nil {
			panic(err)
		}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	unit := time.Duration(secs / 6 * float64(time.Second))
	ctx := context.Background()
	pprof.Do(ctx, pprof.Labels("route", "/a"), func(context.Context) { alpha(unit) })
	pprof.Do(ctx, pprof.Labels("route", "/b"), func(context.Context) { beta(2 * unit) })
	pprof.Do(ctx, pprof.Labels("route", "/c"), func(context.Context) { gamma(3*unit, 1) })
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		panic(err)
	}
	if len(os.Args) > 3 {
		hoard(20000)
		h, err := os.Create(os.Args[3])
		if err != nil {
			panic(err)
		}
		runtime.GC()
		if err := pprof.WriteHeapProfile(h); err != nil {
			panic(err)
		}
		if err := h.Close(); err != nil {
			panic(err)
		}
	}
	if len(os.Args) > 5 {
		runtime.SetBlockProfileRate(1)
		runtime.SetMutexProfileFraction(1)
		waits()
		write("block", os.Args[4])
		write("mutex", os.Args[5])
	}
}
