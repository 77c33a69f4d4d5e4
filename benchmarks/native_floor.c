/* native_floor.c: what one frame's network and signature work costs a node written in C on this machine,
 * with N node processes in a full mesh at 60 Hz (driven by benchmarks/native_floor.py, which builds it).
 *
 * Why: an 8-node race of open4wd-node costs about 1-1.7 ms of CPU per node-frame on the development host,
 * and the Python cuts are spent (docs/node.md, "CPU per frame"). The question left is whether a native
 * per-frame core could meet the 1 ms target on such a host at all, or whether a process woken 60 times a
 * second is too cold there whatever language it is written in. This program does a race node's per-frame
 * work for its inputs and nothing else, with the same primitives the node uses (libsodium's Ed25519, SHA-256
 * and ChaCha20-Poly1305 IETF), in the same shape:
 *
 *   each tick (start + k/60 s, an absolute sleep; at most 4 frames stepped when behind, as the pump does):
 *     - read every peer's TCP socket once (non-blocking), open each frame (AEAD, counter nonce), parse it,
 *       hash each new input into its signer's chain (SHA-256 over frame, input, previous digest) and check
 *       the chain link; verify one Ed25519 signature per run of RUN inputs of a peer (the node's chained
 *       inputs: one check proves a run);
 *     - make this node's input: its digest, chained, and its Ed25519 signature;
 *     - send every peer one sealed frame with the inputs it has not acknowledged (at most 8) and the ack.
 *
 * It leaves out everything else a node does (the simulation step, the session's bookkeeping, votes, the race
 * log, events), so its figure is a floor: no implementation of the protocol's per-frame work can cost less
 * on the same machine. Each process measures its own thread's CPU time (CLOCK_THREAD_CPUTIME_ID) over the
 * frames after a warm-up and prints one line: node, frames, CPU ns, worst lag, verifications, inputs heard,
 * chain breaks, frames that did not open.
 *
 *   native_floor NODES FRAMES ME LISTENER PORT0 .. PORTn-1 START_NS
 * ME is this node's index, LISTENER the descriptor of its listening socket (made and passed by the parent),
 * PORTj node j's port on 127.0.0.1 (node i dials every j > i), START_NS the CLOCK_MONOTONIC time of frame 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 16
#define PERIOD_NS 16666667LL
#define WARMUP_FRAMES 120
#define MAX_STEPS_PER_TICK 4
#define RUN 4                 /* inputs per verified run (the node's runs are 4-7 long) */
#define MAX_UNACKED 8         /* inputs a message carries at most */
#define INPUT_BYTES 8
#define DIGEST_BYTES 32
#define SIG_BYTES 64
#define RECORD_BYTES (4 + INPUT_BYTES + DIGEST_BYTES + SIG_BYTES)
#define BODY_MAX (4 + 1 + MAX_UNACKED * RECORD_BYTES)
#define TAG_BYTES crypto_aead_chacha20poly1305_ietf_ABYTES
#define HISTORY 4096          /* own inputs kept for re-sending (frames mod HISTORY) */

typedef struct {
    int fd;
    uint8_t send_key[32], receive_key[32];
    uint64_t send_n, receive_n;
    uint8_t in[1 << 17];
    size_t in_len;
    int32_t acked;            /* newest own frame the peer acknowledged */
    int32_t heard;            /* newest frame of the peer's inputs held */
    uint8_t chain[DIGEST_BYTES];
    int32_t unverified;       /* inputs of the peer hashed but not yet proven by a verified signature */
    uint8_t public_key[32];
} Peer;

typedef struct {
    uint8_t input[INPUT_BYTES];
    uint8_t prev[DIGEST_BYTES];
    uint8_t sig[SIG_BYTES];
} Own;

static Peer peers[MAX_NODES];
static Own own[HISTORY];
static int nodes, me;
static long long verifications, heard_inputs, bad_inputs, refused_frames;

static long long now_ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "native_floor node %d: %s: %s\n", me, what, strerror(errno));
    exit(3);
}

static void key_for(int from, int to, uint8_t key[32]) {
    /* a fixed key per direction: the benchmark measures the cost of sealing, not a handshake */
    uint8_t seed[8] = {'f', 'l', 'o', 'o', 'r', (uint8_t)from, (uint8_t)to, 0};
    crypto_generichash(key, 32, seed, sizeof seed, NULL, 0);
}

static void identity(int node, uint8_t public_key[32], uint8_t secret_key[64]) {
    uint8_t seed[32] = {0};
    seed[0] = (uint8_t)node;
    seed[1] = 0x4f;
    crypto_sign_seed_keypair(public_key, secret_key, seed);
}

static void digest_of(int32_t frame, const uint8_t *input, const uint8_t *prev, uint8_t out[DIGEST_BYTES]) {
    crypto_hash_sha256_state state;
    uint8_t head[4] = {(uint8_t)(frame >> 24), (uint8_t)(frame >> 16), (uint8_t)(frame >> 8), (uint8_t)frame};
    crypto_hash_sha256_init(&state);
    crypto_hash_sha256_update(&state, head, 4);
    crypto_hash_sha256_update(&state, input, INPUT_BYTES);
    crypto_hash_sha256_update(&state, prev, DIGEST_BYTES);
    crypto_hash_sha256_final(&state, out);
}

static void nonce_of(uint64_t n, uint8_t nonce[12]) {
    memset(nonce, 0, 12);
    for (int i = 0; i < 8; i++) nonce[4 + i] = (uint8_t)(n >> (8 * i));
}

static void put32(uint8_t *p, int32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static int32_t get32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3]);
}

static void handle_body(Peer *peer, const uint8_t *body, size_t len) {
    if (len < 5) { refused_frames++; return; }
    int32_t ack = get32(body);
    int count = body[4];
    if (len != 5 + (size_t)count * RECORD_BYTES) { refused_frames++; return; }
    if (ack > peer->acked) peer->acked = ack;
    for (int i = 0; i < count; i++) {
        const uint8_t *record = body + 5 + i * RECORD_BYTES;
        int32_t frame = get32(record);
        if (frame <= peer->heard) continue;   /* a copy of an input already held */
        const uint8_t *input = record + 4, *prev = input + INPUT_BYTES, *sig = prev + DIGEST_BYTES;
        if (memcmp(prev, peer->chain, DIGEST_BYTES) != 0) bad_inputs++;
        uint8_t digest[DIGEST_BYTES];
        digest_of(frame, input, prev, digest);
        memcpy(peer->chain, digest, DIGEST_BYTES);
        peer->heard = frame;
        heard_inputs++;
        if (++peer->unverified >= RUN) {      /* one signature proves the run it closes */
            if (crypto_sign_verify_detached(sig, digest, DIGEST_BYTES, peer->public_key) != 0) bad_inputs++;
            verifications++;
            peer->unverified = 0;
        }
    }
}

static void read_peer(Peer *peer) {
    for (;;) {
        size_t room = sizeof peer->in - peer->in_len;
        ssize_t got = read(peer->fd, peer->in + peer->in_len, room);
        if (got < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            die("read");
        }
        if (got == 0) return;                 /* the peer finished */
        peer->in_len += (size_t)got;
        if ((size_t)got < room) break;        /* the socket is drained, as the node's receive_arrived assumes */
    }
    size_t at = 0;
    uint8_t body[BODY_MAX], nonce[12];
    while (peer->in_len - at >= 4) {
        uint32_t sealed_len = (uint32_t)get32(peer->in + at);
        if (sealed_len > BODY_MAX + TAG_BYTES) {
            fprintf(stderr, "native_floor node %d: a frame of %u bytes announced, more than any body\n", me, sealed_len);
            exit(4);
        }
        if (peer->in_len - at < 4 + sealed_len) break;
        unsigned long long body_len;
        nonce_of(peer->receive_n++, nonce);
        if (crypto_aead_chacha20poly1305_ietf_decrypt(body, &body_len, NULL, peer->in + at + 4, sealed_len, NULL, 0,
                                                      nonce, peer->receive_key) != 0) {
            refused_frames++;
        } else {
            handle_body(peer, body, (size_t)body_len);
        }
        at += 4 + sealed_len;
    }
    memmove(peer->in, peer->in + at, peer->in_len - at);
    peer->in_len -= at;
}

static void send_peer(Peer *peer, int32_t newest) {
    uint8_t body[BODY_MAX], frame[4 + BODY_MAX + TAG_BYTES], nonce[12];
    int32_t first = peer->acked + 1;
    if (newest - first + 1 > MAX_UNACKED) first = newest - MAX_UNACKED + 1;
    int count = newest >= first ? newest - first + 1 : 0;
    put32(body, peer->heard);
    body[4] = (uint8_t)count;
    for (int i = 0; i < count; i++) {
        int32_t f = first + i;
        const Own *input = &own[f % HISTORY];
        uint8_t *record = body + 5 + i * RECORD_BYTES;
        put32(record, f);
        memcpy(record + 4, input->input, INPUT_BYTES);
        memcpy(record + 4 + INPUT_BYTES, input->prev, DIGEST_BYTES);
        memcpy(record + 4 + INPUT_BYTES + DIGEST_BYTES, input->sig, SIG_BYTES);
    }
    size_t body_len = 5 + (size_t)count * RECORD_BYTES;
    unsigned long long sealed_len;
    nonce_of(peer->send_n++, nonce);
    crypto_aead_chacha20poly1305_ietf_encrypt(frame + 4, &sealed_len, body, body_len, NULL, 0, NULL, nonce,
                                              peer->send_key);
    put32(frame, (int32_t)sealed_len);
    size_t total = 4 + (size_t)sealed_len, sent = 0;
    while (sent < total) {                    /* loopback with small frames: a short write is rare */
        ssize_t wrote = write(peer->fd, frame + sent, total - sent);
        if (wrote < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) continue;
            die("write");
        }
        sent += (size_t)wrote;
    }
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int attempt = 0; connect(fd, (struct sockaddr *)&address, sizeof address) != 0; attempt++) {
        if (attempt > 200) die("connect");
        usleep(10000);
    }
    return fd;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: native_floor NODES FRAMES ME LISTENER PORT0 .. PORTn-1 START_NS\n");
        return 2;
    }
    nodes = atoi(argv[1]);
    int frames = atoi(argv[2]);
    me = atoi(argv[3]);
    if (nodes < 2 || nodes > MAX_NODES || me < 0 || me >= nodes || frames <= WARMUP_FRAMES || argc != 6 + nodes) {
        fprintf(stderr, "native_floor: bad arguments\n");
        return 2;
    }
    long long start = atoll(argv[5 + nodes]);
    if (sodium_init() < 0) { fprintf(stderr, "native_floor: libsodium failed to start\n"); return 3; }
    int listener = atoi(argv[4]);
    uint8_t public_key[32], secret_key[64];
    identity(me, public_key, secret_key);
    for (int j = 0; j < nodes; j++) {
        if (j == me) continue;
        Peer *peer = &peers[j];
        peer->acked = -1;
        peer->heard = -1;
        key_for(me, j, peer->send_key);
        key_for(j, me, peer->receive_key);
        uint8_t secret[64];
        identity(j, peer->public_key, secret);
        if (j > me) {
            peer->fd = connect_to(atoi(argv[5 + j]));
            uint8_t who = (uint8_t)me;
            if (write(peer->fd, &who, 1) != 1) die("write");
        }
    }
    for (int accepted = 0; accepted < me; accepted++) {
        int fd = accept(listener, NULL, NULL);
        uint8_t who;
        if (fd < 0) die("accept");
        if (read(fd, &who, 1) != 1 || who >= me) { fprintf(stderr, "native_floor: bad hello\n"); return 3; }
        peers[who].fd = fd;
    }
    for (int j = 0; j < nodes; j++) {
        if (j == me) continue;
        int one = 1;
        setsockopt(peers[j].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(peers[j].fd, F_SETFL, O_NONBLOCK);
    }
    uint8_t chain[DIGEST_BYTES] = {0};
    int32_t next = 0;
    int worst_lag = 0;
    long long cpu_start = 0;
    long long tick = 0;
    while (next < frames) {
        struct timespec at = {.tv_sec = (start + tick * PERIOD_NS) / 1000000000LL,
                              .tv_nsec = (start + tick * PERIOD_NS) % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR) {}
        if (next >= WARMUP_FRAMES && cpu_start == 0) cpu_start = now_ns(CLOCK_THREAD_CPUTIME_ID);
        int32_t due = (int32_t)((now_ns(CLOCK_MONOTONIC) - start) / PERIOD_NS);
        for (int j = 0; j < nodes; j++) if (j != me) read_peer(&peers[j]);
        int steps = 0;
        while (next <= due && next < frames && steps < MAX_STEPS_PER_TICK) {
            Own *input = &own[next % HISTORY];
            for (int b = 0; b < INPUT_BYTES; b++) input->input[b] = (uint8_t)(next * 31 + b + me);
            memcpy(input->prev, chain, DIGEST_BYTES);
            digest_of(next, input->input, input->prev, chain);
            crypto_sign_detached(input->sig, NULL, chain, DIGEST_BYTES, secret_key);
            next++;
            steps++;
        }
        int lag = due + 1 - next;
        if (next > WARMUP_FRAMES && lag > worst_lag) worst_lag = lag;
        for (int j = 0; j < nodes; j++) if (j != me) send_peer(&peers[j], next - 1);
        tick = due + 1 > tick + 1 ? due + 1 : tick + 1;
    }
    long long cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    printf("%d %d %lld %d %lld %lld %lld %lld\n", me, frames - WARMUP_FRAMES, cpu, worst_lag, verifications,
           heard_inputs, bad_inputs, refused_frames);
    fflush(stdout);
    usleep(300000);                           /* let the peers read the last frames before the links close */
    return 0;
}
