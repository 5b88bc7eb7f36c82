// Fixture for the heap-profile tests (symbolize/go, goheap.h).
//
// It sets runtime.MemProfileRate = 1 first thing in main (RATE=N in the
// environment sets N instead; RATE=default keeps Go's 512 KiB), allocates
// in known functions, keeps part of it live, runs runtime.GC() so that the
// profile is published, prints "pid <PID>" and then reads commands from
// stdin, one per line, answering each with "ok":
//
//	heap0 PATH   pprof.Lookup("heap").WriteTo(f, 0)  (gzipped protobuf)
//	heap1 PATH   pprof.Lookup("heap").WriteTo(f, 1)  (text, raw counts and PCs)
//	quit         exit 0
//
// Allocation sites and the stacks the heap profile shows for them
// (innermost first, runtime frames hidden):
//
//	main.allocSmall <- main.main                   20000 x 64 B, 1000 kept
//	main.allocLarge <- main.main                   40 x 1 MiB, 4 kept
//	main.leaf <- main.middle <- main.outer <- main.main       300 x 512 B, all kept
//	main.mk (inlined) + main.viaInline <- main.main           500 x 4 KiB, 100 kept
//	main.inGoroutine <- main.main.func1            1000 x 128 B, 10 kept (ends in goexit)
//	main.grow <- main.main                         append-grown []int, kept
//
// BUCKETS=N adds N distinct allocation stacks (16 B each, not kept): the
// binary-tree recursion main.tree/main.tree2, 13 levels deep, for timing a
// capture with many buckets.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
)

var keep [][]byte
var keepInts []int

//go:noinline
func allocSmall() {
	for i := 0; i < 20000; i++ {
		b := make([]byte, 64)
		if i%20 == 0 {
			keep = append(keep, b)
		}
	}
}

//go:noinline
func allocLarge() {
	for i := 0; i < 40; i++ {
		b := make([]byte, 1<<20)
		if i%10 == 0 {
			keep = append(keep, b)
		}
	}
}

//go:noinline
func leaf() []byte { return make([]byte, 512) }

//go:noinline
func middle() []byte { return leaf() }

//go:noinline
func outer() {
	for i := 0; i < 300; i++ {
		keep = append(keep, middle())
	}
}

// mk is small enough to be inlined into viaInline.
func mk(n int) []byte { return make([]byte, n) }

//go:noinline
func viaInline() {
	for i := 0; i < 500; i++ {
		b := mk(4096)
		if i%5 == 0 {
			keep = append(keep, b)
		}
	}
}

//go:noinline
func inGoroutine(out *[][]byte) {
	for i := 0; i < 1000; i++ {
		b := make([]byte, 128)
		if i%100 == 0 {
			*out = append(*out, b)
		}
	}
}

//go:noinline
func grow() {
	for i := 0; i < 10000; i++ {
		keepInts = append(keepInts, i)
	}
}

var sink []byte

//go:noinline
func tree(bits, depth int) {
	if depth == 0 {
		sink = make([]byte, 16)
		return
	}
	if bits&1 == 0 {
		tree(bits>>1, depth-1)
	} else {
		tree2(bits>>1, depth-1)
	}
}

//go:noinline
func tree2(bits, depth int) { tree(bits, depth) }

func main() {
	switch r := os.Getenv("RATE"); r {
	case "":
		runtime.MemProfileRate = 1
	case "default":
	default:
		n, err := strconv.Atoi(r)
		if err != nil {
			panic(err)
		}
		runtime.MemProfileRate = n
	}
	allocSmall()
	allocLarge()
	outer()
	viaInline()
	var wg sync.WaitGroup
	var fromG [][]byte
	wg.Add(1)
	go func() {
		defer wg.Done()
		inGoroutine(&fromG)
	}()
	wg.Wait()
	keep = append(keep, fromG...)
	grow()
	if n, _ := strconv.Atoi(os.Getenv("BUCKETS")); n > 0 {
		for i := 0; i < n; i++ {
			tree(i, 13)
		}
	}
	runtime.GC()

	fmt.Printf("pid %d\n", os.Getpid())
	in := bufio.NewReader(os.NewFile(0, "stdin"))
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			os.Exit(0)
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "quit":
			fmt.Println("ok")
			os.Exit(0)
		case "heap0", "heap1":
			out, err := os.Create(f[1])
			if err != nil {
				panic(err)
			}
			pprof.Lookup("heap").WriteTo(out, int(f[0][4]-'0'))
			out.Close()
		}
		fmt.Println("ok")
	}
}
