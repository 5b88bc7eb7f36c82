// bench-go: a Go process with 10,000 parked goroutines (blocked on a channel
// receive, as idle workers are) and one busy one. Prints "ready" when every
// goroutine has started; exits on EOF or "quit" on stdin.
package main

import (
	"bufio"
	"fmt"
	"os"
	"sync"
)

//go:noinline
func parked(ch chan int, wg *sync.WaitGroup) {
	wg.Done()
	<-ch
}

//go:noinline
func spin(x uint64) uint64 {
	for i := 0; i < 1000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var sink uint64

func busy() {
	x := uint64(1)
	for {
		x = spin(x)
		sink = x
	}
}

func main() {
	const n = 10000
	ch := make(chan int)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		go parked(ch, &wg)
	}
	wg.Wait()
	go busy()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "quit" {
			break
		}
	}
	os.Exit(0)
}
