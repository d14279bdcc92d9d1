// Command probe is the workload of the real-node tests: a group of pods that is only Ready when its
// workers have really found their leader.
//
// Every pod serves HTTP on :8080. The leader (LWS_WORKER_INDEX=0) also listens on :7070; each worker
// resolves $LWS_LEADER_ADDRESS through cluster DNS, connects, sends one JSON line describing itself
// (its LeaderWorkerSet variables as the process sees them) and keeps the connection open. The
// leader's /ready passes only while LWS_GROUP_SIZE-1 distinct workers are connected; a worker's
// /ready passes while its connection lives, and the worker exits when the leader goes away.
//
//	GET  /ready     readiness (503 until the condition above holds, or after POST /unready)
//	GET  /env       this pod's LWS_*, DISAGGREGATEDSET_* and TPU_* variables
//	GET  /workers   (leader) what each connected worker reported, by worker index
//	POST /exit      exit with status 3 (a crashed container)
//	POST /oom       allocate memory until the kernel's OOM killer stops the container
//	POST /unready   fail readiness from now on
//
// PROBE_LEADER_PORT moves the leader's port (default 7070).
// PROBE_EXIT_AFTER (a Go duration) makes every start of the container exit with status 3 after that
// long: a crash-looping workload without anyone calling /exit.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const httpAddr = ":8080"

// leaderPort is where the leader listens and the workers dial: PROBE_LEADER_PORT, default 7070. A
// leader told another port than its workers is a leader they cannot reach.
var leaderPort = envOr("PROBE_LEADER_PORT", "7070")

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

type report map[string]string

// environment is the part of the environment the tests check: what LeaderWorkerSet injects.
func environment() report {
	out := report{}
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		for _, prefix := range []string{"LWS_", "DISAGGREGATEDSET_", "TPU_"} {
			if strings.HasPrefix(name, prefix) {
				out[name] = value
			}
		}
	}
	host, _ := os.Hostname()
	out["HOSTNAME"] = host
	return out
}

type leader struct {
	mu      sync.Mutex
	workers map[string]report // by LWS_WORKER_INDEX, while connected
}

func (l *leader) serve(listener net.Listener) {
	for {
		conn, err := listener.Accept()
		if err != nil {
			log.Fatalf("accept: %v", err)
		}
		go l.handle(conn)
	}
}

func (l *leader) handle(conn net.Conn) {
	defer conn.Close()
	reader := bufio.NewReader(conn)
	line, err := reader.ReadBytes('\n')
	if err != nil {
		return
	}
	var rep report
	if json.Unmarshal(line, &rep) != nil {
		return
	}
	index := rep["LWS_WORKER_INDEX"]
	l.mu.Lock()
	l.workers[index] = rep
	l.mu.Unlock()
	log.Printf("worker %s connected from %s", index, conn.RemoteAddr())
	_, _ = reader.ReadByte() // blocks until the worker goes away
	l.mu.Lock()
	delete(l.workers, index)
	l.mu.Unlock()
	log.Printf("worker %s disconnected", index)
}

func (l *leader) connected() map[string]report {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]report, len(l.workers))
	for k, v := range l.workers {
		out[k] = v
	}
	return out
}

// joinLeader dials the leader until it answers, then holds the connection; it exits the process when
// the leader goes away, as a real worker whose collective broke would.
func joinLeader(ready *atomic.Bool) {
	address := net.JoinHostPort(os.Getenv("LWS_LEADER_ADDRESS"), leaderPort)
	payload, _ := json.Marshal(environment())
	for {
		conn, err := net.DialTimeout("tcp", address, 2*time.Second)
		if err != nil {
			log.Printf("leader %s not reachable yet: %v", address, err)
			time.Sleep(time.Second)
			continue
		}
		if _, err := conn.Write(append(payload, '\n')); err != nil {
			conn.Close()
			continue
		}
		log.Printf("connected to leader %s", address)
		ready.Store(true)
		_, _ = bufio.NewReader(conn).ReadByte()
		log.Fatalf("leader %s went away", address)
	}
}

func allocateForever() {
	var hoard [][]byte
	for {
		block := make([]byte, 16<<20)
		for i := range block {
			block[i] = 1 // touch every page so it is really resident
		}
		hoard = append(hoard, block)
	}
}

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	size, _ := strconv.Atoi(os.Getenv("LWS_GROUP_SIZE"))
	isLeader := os.Getenv("LWS_WORKER_INDEX") == "0" || os.Getenv("LWS_WORKER_INDEX") == ""
	var unready atomic.Bool
	var joined atomic.Bool
	lead := &leader{workers: map[string]report{}}

	if after := os.Getenv("PROBE_EXIT_AFTER"); after != "" {
		wait, err := time.ParseDuration(after)
		if err != nil {
			log.Fatalf("PROBE_EXIT_AFTER=%q: %v", after, err)
		}
		go func() { time.Sleep(wait); log.Printf("exiting as PROBE_EXIT_AFTER says"); os.Exit(3) }()
	}
	if isLeader {
		listener, err := net.Listen("tcp", ":"+leaderPort)
		if err != nil {
			log.Fatalf("listen: %v", err)
		}
		go lead.serve(listener)
	} else {
		go joinLeader(&joined)
	}

	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	http.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		ok := joined.Load()
		if isLeader {
			ok = len(lead.connected()) >= size-1
		}
		if !ok || unready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	http.HandleFunc("/env", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, environment()) })
	http.HandleFunc("/workers", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, lead.connected()) })
	http.HandleFunc("POST /exit", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "exiting")
		go func() { time.Sleep(100 * time.Millisecond); os.Exit(3) }()
	})
	http.HandleFunc("POST /oom", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "allocating")
		go allocateForever()
	})
	http.HandleFunc("POST /unready", func(w http.ResponseWriter, _ *http.Request) {
		unready.Store(true)
		fmt.Fprintln(w, "unready")
	})
	log.Printf("probe: leader=%v group size=%d", isLeader, size)
	log.Fatal(http.ListenAndServe(httpAddr, nil))
}
