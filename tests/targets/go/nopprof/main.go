// Fixture without runtime/pprof: nothing reaches runtime.MemProfile, so the
// linker sets runtime.disableMemoryProfiling and MemProfileRate is 0 from
// the start; the heap profile must be reported as disabled.
//
// It allocates a little, prints "pid <PID>", then answers "ok" to every
// line on stdin and exits on "quit" or EOF. Only os and syscall-level
// packages are used (fmt and bufio do not link MemProfile either, but stay
// minimal).
package main

import (
	"os"
	"strconv"
)

var keep [][]byte

//go:noinline
func alloc() {
	for i := 0; i < 1000; i++ {
		keep = append(keep, make([]byte, 256))
	}
}

func main() {
	alloc()
	os.Stdout.WriteString("pid " + strconv.Itoa(os.Getpid()) + "\n")
	var buf [256]byte
	line := ""
	for {
		n, err := os.Stdin.Read(buf[:])
		if n <= 0 || err != nil {
			os.Exit(0)
		}
		line += string(buf[:n])
		for {
			i := 0
			for i < len(line) && line[i] != '\n' {
				i++
			}
			if i == len(line) {
				break
			}
			cmd := line[:i]
			line = line[i+1:]
			os.Stdout.WriteString("ok\n")
			if cmd == "quit" {
				os.Exit(0)
			}
		}
	}
}
