// Target for test_symbolize_go.c: prints "ready PID ADDR" where ADDR is
// the entry of main.leaf, then spins until killed.
package main

import (
	"fmt"
	"os"
	"reflect"
	"time"
)

//go:noinline
func leaf(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i
	}
	return s
}

func main() {
	fmt.Printf("ready %d %x\n", os.Getpid(), reflect.ValueOf(leaf).Pointer())
	for {
		leaf(100)
		time.Sleep(10 * time.Millisecond)
	}
}
