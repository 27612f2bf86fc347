/* SPDX-License-Identifier: MIT */
/*
 * nm_thread.c - NIC threads: one libev loop each, QPs sharded across them.
 *
 * Watchers per thread: ev_idle runs polling passes while there is anything
 * to poll; ev_async carries control-path requests (add/remove a QP, run a
 * function, wake up) and wakes the loop from its sleep; ev_timer ends the
 * longest sleeps of the adaptive back-off.
 *
 * A pass serves the ACTIVE QPs (rung recently or with work in flight) and
 * then sweeps a bounded slice of the inactive ones for a changed doorbell,
 * so the cost of a pass grows with the active QPs, not with the idle ones.
 * A QP that stays empty for NM_IDLE_DEACT passes leaves the active list.
 *
 * Back-off when every pass is empty (adaptive mode): spin, then
 * sched_yield(), then nanosleep() in growing steps, then 1 ms ev_timer
 * sleeps (libev's epoll backend has millisecond resolution) that an
 * ev_async wakes early.  On two loaded cores a spinning NIC would starve the
 * threads that play the device, hence the early yield.  Spin mode never
 * yields or sleeps.
 *
 * A thread whose QPs are all doorbell-notified (gdak's libibverbs kicks
 * after every doorbell: nm_ext_qp_doorbell_notify) skips that back-off:
 * at its first empty pass it blocks in libev (epoll on the transport's
 * sockets, its timers and the ev_async) until a kick, a packet or a
 * transport timer, when may_block says nothing else needs a pass.  So an
 * idle verbs process takes no CPU, and a busy one adds no runnable thread
 * between events - what matters where the programs themselves busy-poll
 * on few CPUs.  Spin mode spins for them too.
 *
 * Between passes a thread holds no pointer to any MR or QP: each pass end
 * is a quiescent point counted in qseq; nm_engine_sync() waits for every
 * thread to pass one (RCU-like grace period).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include <gdak/dev/ordering.h>
#include <gdak/env.h>

#include "nm_loc.h"
#include "nm_thread_test.h"
#include "tr_udp.h"

#define NM_IDLE_DEACT 512	/* empty passes before a QP leaves the active list */
#define NM_SWEEP 8		/* inactive QPs looked at per pass */
#define NM_SPIN_NS 50000		/* adaptive: empty time spent spinning */
#define NM_YIELD_NS 1000000	/* ... then yielding */
#define NM_NAP_NS 5000000	/* ... then 50 us naps; after that 1 ms timer sleeps */
#define NM_SPIN_YIELD_NS 16000	/* spin mode: empty time between sched_yield()s */
#define NM_INNER_PASSES 64	/* passes per idle callback before libev polls again */
#define NM_WD_NS 1000000	/* watchdog period while inline runs arm deadlines */
#define NM_INLINE_PASSES 4	/* most passes one inline run makes */

struct nm_cmd {
	struct nm_cmd *next;
	void (*fn)(void *arg);
	void *arg;
	int done;
};

struct nm_thread {
	uint32_t id;
	pthread_t tid;
	struct ev_loop *loop;
	ev_idle idle;
	ev_async async;
	ev_timer timer;

	pthread_mutex_t lock;	/* cmds */
	pthread_cond_t cond;
	struct nm_cmd *cmds, **cmds_tail;

	struct nm_qp **qps;	/* every QP served */
	uint32_t nqps, qcap;
	struct nm_qp **act;	/* active QPs */
	uint32_t nact;
	uint32_t sweep;
	uint32_t empty;		/* consecutive empty passes */
	uint64_t empty_since;	/* when the current run of empty passes began */
	uint64_t last_yield;	/* adaptive: the spin phase's last sched_yield() */
	bool worked;		/* the last non-empty pass has not been yielded after */
	bool sleeping;
	_Atomic int kicked;
	_Atomic uint64_t qseq;	/* quiescent points passed */
	uint64_t tr_gen;	/* generation of the trace tbuf belongs to */
	struct gdak_trace_buf *tbuf;
	bool in_pass;		/* records now belong to one trace batch (nm_tbuf_pass) */

	/* The engine lock: the thread holds it at all times except while libev
	 * waits in the kernel (its loop release/acquire callbacks), so another
	 * thread that takes it (nm_thread_try_inline) is this thread for that
	 * while, and everything the engine keeps per thread - the QP lists,
	 * the trace buffer, the libev watchers - has one owner at a time. */
	pthread_mutex_t elock;
	ev_prepare prep;
	ev_timer wd;	   /* watchdog: the wait's upper bound while inline work runs */
	uint64_t wd_due;   /* its deadline (nm_now_ns), valid while active */
	uint64_t wait_due; /* the thread wakes by then at the latest (UINT64_MAX: no bound) */
	uint64_t inl_runs, inl_seen; /* inline runs, and the count the watchdog last saw */
	bool timer_kick;	     /* an inline run armed a deadline before wait_due */
	uint32_t fork_gen;	     /* fork_gen when the thread started (inherited()) */
	struct nm_sched sched;	     /* GDAK_NIC_SCHED as the engine started */
	bool rt;		     /* it runs SCHED_FIFO / SCHED_RR: never spins */
	int sched_ret;		     /* 0, or why the policy was refused (-errno) */
	bool started;		     /* thread_main applied it (under lock) */
};

static struct {
	pthread_mutex_t lock;
	int refs;
	unsigned n;
	struct nm_thread *thr;
	_Atomic unsigned rr;
} eng = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void fork_prepare(void)
{
	pthread_mutex_lock(&eng.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&eng.lock);
}

static __thread struct nm_thread *cur_thread; /* the NIC thread running here */
static __thread bool in_inline;		      /* ... as an inline run (nm_thread_try_inline) */
static _Atomic uint64_t work_yields;	      /* nm_thread_test.h */
static _Atomic uint64_t blocks;		      /* nm_thread_test.h */
static _Atomic uint64_t inline_runs;	      /* nm_thread_test.h */
static _Atomic uint64_t inline_busy;	      /* nm_thread_test.h */
static _Atomic uint64_t inline_wakes;	      /* inline runs that woke the thread after */
static _Atomic uint64_t inline_forked;	      /* nm_thread_test.h */

/*
 * fork(): the child has copies of every NIC thread's state - its engine
 * lock as it was (free while the thread waited in the kernel), its rings,
 * its PSNs - and the very sockets the parent's threads read, but none of
 * the threads.  rdma-core lets a child use none of its parent's resources
 * (ibv_fork_init(3)); here the danger is that the copy still works: an
 * inline run in the child would execute the parent's WQEs again and send
 * with the parent's PSNs, or read the parent's packets off its socket.  So
 * a thread started before the last fork of this process is inherited, and
 * nothing runs it: no inline run, no kick, no call.
 */
static _Atomic uint32_t fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* eng.lock is held across fork() (fork_prepare) so that the child's copy is
 * not one another thread held: a child may close its copies of the
 * parent's devices, and then open its own. */
static void fork_child(void)
{
	atomic_fetch_add_explicit(&fork_gen, 1, memory_order_relaxed);
	fork_parent();
}

static void fork_register(void)
{
	(void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static bool inherited(const struct nm_thread *t)
{
	return t->fork_gen != atomic_load_explicit(&fork_gen, memory_order_relaxed);
}

bool nm_thread_inherited(const struct nm_thread *t)
{
	return inherited(t);
}

static void inherited_warn(const struct nm_thread *t, const char *what)
{
	static _Atomic int once;

	atomic_fetch_add_explicit(&inline_forked, 1, memory_order_relaxed);
	if (!atomic_exchange(&once, 1))
		GDAK_WARN("nic", t->id,
			  "%s in a child of fork(): the device belongs to the parent process "
			  "(a child may use none of its parent's RDMA resources), nothing is "
			  "executed",
			  what);
}
__thread struct gdak_trace_buf *nm_tbuf_pass; /* nm_loc.h */
__thread struct nm_wqe_pend nm_pend;		/* nm_loc.h */

uint64_t nm_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- active list ------------------------------------------------------------ */

static void wake(struct nm_thread *t);

static void activate(struct nm_thread *t, struct nm_qp *qp)
{
	qp->idle_passes = 0;
	/* a QP already let go of (being destroyed) stays off the list: its
	 * transport's watchers may still fire until qp_fini stops them */
	if (qp->active || !qp->on_thread)
		return;
	qp->active = true;
	t->act[t->nact++] = qp;	/* act[] has room for every QP of the thread */
}

/* Also ends the back-off: called from a transport's ev_io / ev_timer
 * callback, the thread may be between sleeps with its ev_idle stopped. */
void nm_thread_activate(struct nm_qp *qp)
{
	struct nm_thread *t = qp->thr;

	activate(t, qp);
	t->empty = 0;
	wake(t);
}

static void deactivate_at(struct nm_thread *t, uint32_t i)
{
	t->act[i]->active = false;
	t->act[i] = t->act[--t->nact];
}

/* ---- one pass ------------------------------------------------------------------ */

static int pass(struct nm_thread *t)
{
	int work = 0;

	t->in_pass = true;	/* trace: a pass's records form one batch */
	nm_rg_in_pass = 1;	/* GPU-memory CQs: the pass's CQEs go in one batch */
	for (uint32_t i = 0; i < t->nact;) {
		struct nm_qp *qp = t->act[i];
		int r = nm_req_progress(qp);

		if (r > 0) {
			work += r;
			qp->idle_passes = 0;
		} else if (++qp->idle_passes > NM_IDLE_DEACT && !nm_req_busy(qp)) {
			if (nm_db_idle_check(qp)) {
				qp->idle_passes = 0;
			} else {
				deactivate_at(t, i);
				continue;
			}
		}
		i++;
	}
	if (t->nqps > t->nact) {
		uint32_t n = t->nqps < NM_SWEEP ? t->nqps : NM_SWEEP;
		for (uint32_t k = 0; k < n; k++) {
			struct nm_qp *qp;

			if (t->sweep >= t->nqps)
				t->sweep = 0;
			qp = t->qps[t->sweep++];
			if (!qp->active && nm_db_peek(qp)) {
				activate(t, qp);
				work++;
			}
		}
	}
	t->in_pass = false;
	nm_rg_in_pass = 0;
	nm_rg_pass_end_if();
	NM_TRACE_PASS_END(nm_tbuf_pass);
	atomic_fetch_add_explicit(&t->qseq, 1, memory_order_release);
	return work;
}

static void handle_kicks(struct nm_thread *t)
{
	if (!atomic_exchange(&t->kicked, 0))
		return;
	for (uint32_t i = 0; i < t->nqps; i++)
		activate(t, t->qps[i]);
}

/* Whether the thread runs a real-time policy, whoever set it: GDAK_NIC_SCHED,
 * one inherited from the opener (chrt), or one set from outside later. */
static void rt_refresh(struct nm_thread *t)
{
	struct sched_param sp;
	int pol;

	if (!pthread_getschedparam(pthread_self(), &pol, &sp))
		t->rt = pol == SCHED_FIFO || pol == SCHED_RR;
}

/* Wait in the kernel (ev_run) for an event or for the timer: a packet or
 * a kick ends the wait at once; a QP rung in memory is looked at again
 * when the timer fires. */
static void sleep_for(struct nm_thread *t, double secs)
{
	ev_idle_stop(t->loop, &t->idle);
	if (t->nqps) {
		ev_timer_set(&t->timer, secs, 0.);
		ev_timer_start(t->loop, &t->timer);
	}
	t->sleeping = true;
}

static void go_sleep(struct nm_thread *t)
{
	rt_refresh(t);
	sleep_for(t, 0.001);
}

/*
 * 1 when the thread may block in the kernel until an event: every QP it
 * serves is rung only through a post path that kicks (db_notify, not
 * rung in memory by a program: db_any), has nothing announced and not yet
 * executed, no completed op waiting to be retired (a full CQ, a CQE held
 * back by fault injection), is not flushing in ERR, and its transport
 * says nothing of its own waits for a pass.  Then whatever comes next - a
 * kick, a packet, a retransmission or RNR timer - arrives as an ev_async,
 * ev_io or ev_timer, as rxe's work runs only when asked for.
 */
static bool may_block(struct nm_thread *t)
{
	for (uint32_t i = 0; i < t->nqps; i++) {
		struct nm_qp *qp = t->qps[i];
		int (*quiet)(struct nm_qp *) = qp->ctx->tr->qp_quiet;

		if (!atomic_load_explicit(&qp->db_notify, memory_order_relaxed) ||
		    atomic_load_explicit(&qp->db_any, memory_order_relaxed) || !quiet)
			return false;
		if (qp->ci != qp->pi || qp->busy_since_ns || qp->rg ||
		    nm_qp_state(qp) == GDAK_QPS_ERR)
			return false;
		if (qp->if_head != qp->if_tail &&
		    (qp->inflight[qp->if_head % NM_MAX_INFLIGHT].flags & NM_OPF_DONE))
			return false;
		if (nm_db_peek(qp) || !quiet(qp))
			return false;
	}
	return true;
}

/* Nothing to poll until an event: no timer (may_block said so). */
static void block(struct nm_thread *t)
{
	ev_idle_stop(t->loop, &t->idle);
	t->sleeping = true;
	atomic_fetch_add_explicit(&blocks, 1, memory_order_relaxed);
}

static void wake(struct nm_thread *t)
{
	if (!t->sleeping)
		return;
	t->sleeping = false;
	ev_timer_stop(t->loop, &t->timer);
	ev_idle_start(t->loop, &t->idle);
}

static void idle_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct nm_thread *t = ev_userdata(loop);
	/* a real-time thread never spins (GDAK_NIC_SCHED) */
	int spin = !t->rt &&
		   atomic_load_explicit(&nm_cfg.poll, memory_order_relaxed) == GDAK_NIC_POLL_SPIN;

	for (int k = 0; k < NM_INNER_PASSES && !ev_async_pending(&t->async); k++) {
		uint64_t idle;

		if (pass(t)) {
			t->empty = 0;
			t->worked = true;
			continue;
		}
		if (!spin && may_block(t)) {
			/* no yield first: blocking gives the CPU away anyway */
			t->worked = false;
			block(t);
			return;
		}
		/* the mode read again: a device that switched it before its
		 * last doorbell finds the switch made after that work */
		if (t->worked && !t->rt &&
		    atomic_load_explicit(&nm_cfg.poll, memory_order_relaxed) !=
			    GDAK_NIC_POLL_SPIN) {
			/* Adaptive mode (spin mode keeps its CPU for the lowest
			 * latency where each NIC thread has a core): the pass
			 * before this empty one did work - a CQE, a receive
			 * completion - that a device thread is likely
			 * waiting for, and that thread may share this CPU (more
			 * runnable threads than CPUs: two cores, the trace
			 * writer's thread, the demo's target thread): hand the
			 * CPU over once now rather than after a whole spin-yield
			 * interval, which would otherwise be the latency of every
			 * one-at-a-time operation.  Where nothing else is
			 * runnable sched_yield returns at once. */
			sched_yield();
			atomic_fetch_add_explicit(&work_yields, 1, memory_order_relaxed);
			t->last_yield = nm_now_ns();
		}
		t->worked = false;
		if (spin) {
			/* even spinning, give the CPU away now and then: with more
			 * runnable threads than CPUs (the device threads, a 2-vCPU
			 * guest) a thread that never yields makes every round trip
			 * wait a scheduler slice (milliseconds).  By time, not by
			 * passes: an empty pass is ~35 ns, so a pass count fit for
			 * one machine is 150 us of spinning on another.  The clock
			 * is read every 64 empty passes (865 ns per read in a guest
			 * whose clocksource is the HPET). */
			if (t->empty++ == 0)
				t->empty_since = nm_now_ns();
			if (t->empty % 64 == 0) {
				uint64_t now = nm_now_ns();

				if (now - t->empty_since >= NM_SPIN_YIELD_NS) {
					rt_refresh(t);
					if (t->rt) { /* made real-time from outside */
						sleep_for(t, 50e-6);
						return;
					}
					sched_yield();
					t->empty_since = now;
				}
			} else {
				gdak_dev_cpu_relax();
			}
			continue;
		}
		/* back-off by time idle, read every 16 empty passes */
		if (t->empty++ == 0)
			t->empty_since = nm_now_ns();
		if (t->rt) {
			/* real-time: no spin, no yield (which would hand the CPU
			 * to no SCHED_OTHER thread): spinning, it would keep the
			 * program it serves off this CPU.  A QP it cannot block
			 * for (one rung in memory) is looked at after short
			 * timer waits in the event loop, not naps here: there a
			 * packet, a kick or a retransmission timer is served at
			 * once. */
			if (nm_now_ns() - t->empty_since < NM_NAP_NS)
				sleep_for(t, 50e-6);
			else
				go_sleep(t);
			return;
		}
		if (t->empty % 16) {
			gdak_dev_cpu_relax();
			continue;
		}
		{
			uint64_t now = nm_now_ns();

			idle = now - t->empty_since;
			if (idle < NM_SPIN_NS) {
				/* spinning as spin mode does, yields included: a
				 * device thread that shares this CPU (more runnable
				 * threads than CPUs) must get it back as soon as spin
				 * mode would give it, or every one-at-a-time operation
				 * waits out the whole spin phase */
				if (now - t->last_yield >= NM_SPIN_YIELD_NS) {
					sched_yield();
					t->last_yield = now;
				} else {
					gdak_dev_cpu_relax();
				}
				continue;
			}
		}
		if (idle < NM_YIELD_NS) {
			sched_yield();
		} else if (idle < NM_NAP_NS) {
			struct timespec ts = {0, 50000};
			nanosleep(&ts, NULL);
		} else {
			go_sleep(t);
			return;
		}
	}
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct nm_thread *t = ev_userdata(loop);

	atomic_fetch_add_explicit(&t->qseq, 1, memory_order_release);
	/* one pass; if still nothing, idle_cb sends us back to sleep at once */
	t->sleeping = false;
	ev_idle_start(loop, &t->idle);
}

static void async_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct nm_thread *t = ev_userdata(loop);
	struct nm_cmd *c;

	for (;;) {
		pthread_mutex_lock(&t->lock);
		c = t->cmds;
		if (c) {
			t->cmds = c->next;
			if (!t->cmds)
				t->cmds_tail = &t->cmds;
		}
		pthread_mutex_unlock(&t->lock);
		if (!c)
			break;
		c->fn(c->arg);
		pthread_mutex_lock(&t->lock);
		c->done = 1;
		pthread_cond_broadcast(&t->cond);
		pthread_mutex_unlock(&t->lock);
	}
	handle_kicks(t);
	atomic_fetch_add_explicit(&t->qseq, 1, memory_order_release);
	t->empty = 0;
	if (t->nqps)
		wake(t);
}

/*
 * Before libev computes how long to wait: an upper bound on that wait for
 * the inline runs that may arm deadlines meanwhile (nm_thread_deadline).
 * A blocking thread that saw inline work since its last wait keeps a
 * watchdog timer NM_WD_NS ahead, so an inline run that arms a deadline
 * later than that (a retransmission timeout) needs no wakeup: the thread
 * wakes by the watchdog and libev then counts the new timer in.  With no
 * inline work since, the thread blocks without a bound and the first
 * deadline an inline run arms wakes it once (timer_kick).
 */
static void prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct nm_thread *t = ev_userdata(loop);

	(void)w;
	(void)revents;
	if (!t->sleeping) {
		t->wait_due = 0; /* libev polls without waiting */
		return;
	}
	if (t->inl_runs != t->inl_seen) {
		t->inl_seen = t->inl_runs;
		if (!ev_is_active(&t->wd)) {
			ev_timer_set(&t->wd, NM_WD_NS * 1e-9, 0.);
			ev_timer_start(loop, &t->wd);
			t->wd_due = nm_now_ns() + NM_WD_NS;
		}
	}
	t->wait_due = ev_is_active(&t->wd) ? t->wd_due : UINT64_MAX;
}

static void wd_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct nm_thread *t = ev_userdata(loop);

	(void)w;
	(void)revents;
	atomic_fetch_add_explicit(&t->qseq, 1, memory_order_release);
}

/* libev's wait in the kernel is the only time the thread lets go of its
 * engine lock. */
static void release_cb(struct ev_loop *loop)
{
	struct nm_thread *t = ev_userdata(loop);

	pthread_mutex_unlock(&t->elock);
}

static void acquire_cb(struct ev_loop *loop)
{
	struct nm_thread *t = ev_userdata(loop);

	pthread_mutex_lock(&t->elock);
}

/* ---- the NIC threads' scheduling policy (GDAK_NIC_SCHED) -------------------------- */

/*
 * Where the programs busy-poll on few CPUs (perftest's latency tests spin
 * on memory; a 2-vCPU guest), a NIC thread woken by a packet or a kick
 * competes as an equal with the spinners it serves, and CFS lets it
 * preempt one only after a wakeup granularity, or at the next tick -
 * where rxe's work runs in softirq, which preempts at once.  A real-time
 * policy, or a lower nice value, buys that preemption back where the CPU
 * is the kernel's to give (in a TCG guest the wait is mostly below it:
 * docs/BENCHMARKS.md "Session 9"): the program
 * asks for it with GDAK_NIC_SCHED, the thread applies it to itself at its
 * start where the kernel permits it (CAP_SYS_NICE, RLIMIT_RTPRIO,
 * RLIMIT_NICE), and says why where it does not.  A real-time NIC thread
 * never spins (idle_cb): it would keep the program off its CPU.
 */

static int sched_num(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	/* strtol would take leading blanks and a '+' */
	if (!(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int nm_sched_parse(const char *s, struct nm_sched *out)
{
	struct nm_sched sc = { NM_SCHED_INHERIT, 0 };
	const char *why = NULL;
	int ret = 0;

	if (!s || !*s || !strcasecmp(s, "inherit")) {
		*out = sc;
		return 0;
	}
	if (!strncasecmp(s, "nice:", 5)) {
		sc.kind = NM_SCHED_NICE;
		ret = sched_num(s + 5, -20, 19, &sc.prio);
		why = "a nice value is -20..19";
	} else if (!strncasecmp(s, "fifo", 4) || !strncasecmp(s, "rr", 2)) {
		size_t n = s[0] == 'f' || s[0] == 'F' ? 4 : 2;

		sc.kind = n == 4 ? NM_SCHED_FIFO : NM_SCHED_RR;
		sc.prio = 1;
		why = "a real-time priority is 1..99";
		if (s[n] == ':') {
			ret = sched_num(s + n + 1, 1, 99, &sc.prio);
		} else if (s[n]) {
			ret = -EINVAL;
			why = "unknown policy";
		}
	} else {
		ret = -EINVAL;
		why = "unknown policy";
	}
	if (ret) {
		GDAK_ERR("nic", 0,
			 "GDAK_NIC_SCHED='%s': %s; allowed: inherit, nice:N (N -20..19), fifo[:P] "
			 "or rr[:P] (P 1..99)",
			 s, why);
		return -EINVAL;
	}
	*out = sc;
	return 0;
}

const char *nm_sched_str(const struct nm_sched *sc, char *buf, size_t len)
{
	static const char *const name[] = { "inherit", "nice", "fifo", "rr" };

	if (sc->kind == NM_SCHED_INHERIT)
		snprintf(buf, len, "inherit");
	else
		snprintf(buf, len, "%s:%d", name[sc->kind], sc->prio);
	return buf;
}

static void rlim_str(int res, char *buf, size_t len)
{
	struct rlimit rl;

	if (getrlimit(res, &rl))
		snprintf(buf, len, "unknown");
	else if (rl.rlim_cur == RLIM_INFINITY)
		snprintf(buf, len, "unlimited");
	else
		snprintf(buf, len, "%llu", (unsigned long long)rl.rlim_cur);
}

/* On the thread itself, before its loop runs: 0 or the refusal (-errno),
 * logged either way. */
static int sched_apply(struct nm_thread *t)
{
	const struct nm_sched *sc = &t->sched;
	char what[32], lim[32], why[160];
	int ret = 0;

	rt_refresh(t);
	if (sc->kind == NM_SCHED_INHERIT)
		return 0;
	nm_sched_str(sc, what, sizeof(what));
	if (sc->kind == NM_SCHED_NICE && t->rt)
		GDAK_WARN("nic", 0,
			  "GDAK_NIC_SCHED=%s: NIC thread %u already runs a real-time policy it "
			  "inherited; a nice value does not change it",
			  what, t->id);
	if (sc->kind == NM_SCHED_NICE) {
		/* Linux: a nice value is per thread, set through its tid */
		if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), sc->prio))
			ret = -errno;
	} else {
		struct sched_param sp = { .sched_priority = sc->prio };

		ret = -pthread_setschedparam(
			pthread_self(), sc->kind == NM_SCHED_FIFO ? SCHED_FIFO : SCHED_RR, &sp);
		if (!ret)
			t->rt = true;
	}
	if (!ret) {
		GDAK_INFO("nic", 0, "NIC thread %u runs %s (GDAK_NIC_SCHED)%s", t->id, what,
			  t->rt && atomic_load(&nm_cfg.poll) == GDAK_NIC_POLL_SPIN
				  ? "; a real-time NIC thread does not spin: GDAK_POLL=spin ignored"
				  : "");
		return 0;
	}
	if ((ret == -EPERM || ret == -EACCES) && sc->kind == NM_SCHED_NICE) {
		rlim_str(RLIMIT_NICE, lim, sizeof(lim));
		snprintf(why, sizeof(why),
			 "a lower nice value needs CAP_SYS_NICE or RLIMIT_NICE >= %d (it is %s)",
			 20 - sc->prio, lim);
	} else if (ret == -EPERM) {
		rlim_str(RLIMIT_RTPRIO, lim, sizeof(lim));
		snprintf(why, sizeof(why),
			 "a real-time policy needs CAP_SYS_NICE or RLIMIT_RTPRIO >= %d (it is %s), "
			 "and real-time runtime in the thread's cgroup",
			 sc->prio, lim);
	} else {
		snprintf(why, sizeof(why), "%s", strerror(-ret));
	}
	GDAK_WARN("nic", 0,
		  "GDAK_NIC_SCHED=%s refused for NIC thread %u: %s; it keeps the policy "
		  "it inherited",
		  what, t->id, why);
	return ret;
}

static void *thread_main(void *arg)
{
	struct nm_thread *t = arg;
	char name[16];
	int ret;

	snprintf(name, sizeof(name), "gdak-nic%u", t->id);
	pthread_setname_np(pthread_self(), name);
	cur_thread = t;
	ret = sched_apply(t);
	pthread_mutex_lock(&t->lock);
	t->sched_ret = ret;
	t->started = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_lock(&t->elock);
	ev_run(t->loop, 0);
	pthread_mutex_unlock(&t->elock);
	return NULL;
}

/* ---- control path ---------------------------------------------------------------- */

void nm_thread_call(struct nm_thread *t, void (*fn)(void *), void *arg)
{
	struct nm_cmd c = {.fn = fn, .arg = arg};

	/* on the thread, or in an inline run that holds its engine lock
	 * (waiting for the thread would wait for ourselves) */
	if (cur_thread == t) {
		fn(arg);
		return;
	}
	if (inherited(t)) {
		/* no thread would ever answer (and its lock may be the copy
		 * of one held at the fork) */
		inherited_warn(t, "a call to the NIC thread");
		return;
	}
	pthread_mutex_lock(&t->lock);
	*t->cmds_tail = &c;
	t->cmds_tail = &c.next;
	pthread_mutex_unlock(&t->lock);
	ev_async_send(t->loop, &t->async);
	pthread_mutex_lock(&t->lock);
	while (!c.done)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

struct ev_loop *nm_thread_loop(struct nm_thread *t) { return t->loop; }
bool nm_thread_is_current(const struct nm_thread *t)
{
	return t && cur_thread == t;
}
uint32_t nm_thread_id(const struct nm_thread *t) { return t->id; }

void nm_trace_pend_flush(void)
{
#ifdef NM_HAVE_TRACE
	struct nm_wqe_pend p = nm_pend;

	nm_pend.n = 0;
	gdak_trace_wqes(nm_tbuf_pass, p.qp->base.qpn, p.idx, p.w, p.n);
#endif
}

void nm_trace_wqe_slow(struct nm_qp *qp, uint16_t idx, const uint8_t *w, uint32_t bbs)
{
#ifdef NM_HAVE_TRACE
	struct gdak_trace_buf *tb = nm_tbuf(qp);	/* the pending ones first */

	if (!tb)
		return;
	/* pending only inside the pass's batch (its end traces them) and
	 * from the ring itself (qp->wrap is the next wrapping WQE's) */
	if (bbs == 1 && tb == nm_tbuf_pass && w != qp->wrap) {
		nm_pend = (struct nm_wqe_pend){.qp = qp, .w = w, .idx = idx, .n = 1};
		return;
	}
	gdak_trace_wqe(tb, qp->base.qpn, idx, w, bbs);
#else
	(void)qp;
	(void)idx;
	(void)w;
	(void)bbs;
#endif
}

struct gdak_trace_buf *nm_thread_tbuf_cur(void)
{
#ifdef NM_HAVE_TRACE
	struct nm_thread *t = cur_thread;
	struct gdak_trace *tr;
	uint64_t gen;

	if (!t)
		return NULL;
	tr = atomic_load_explicit(&nm_cfg.trace, memory_order_acquire);
	if (!tr)
		return NULL;
	/* Not the pointer: a trace closed (gdak_nic_set_trace(NULL)) and
	 * another opened later may get the same address while this thread
	 * still holds the old one's buffer.  The generation never repeats.
	 * tr itself stays valid until this thread's next quiescent point
	 * (gdak_nic_set_trace waits for nm_engine_sync before closing). */
	gen = gdak_trace_generation(tr);
	if (gen != t->tr_gen) {
		NM_TRACE_PASS_END(nm_tbuf_pass);	/* the old trace's batch ends here */
		t->tbuf = gdak_trace_thread_buf(tr, t->id);
		t->tr_gen = gen;
	}
	/* the first record of a pass begins its batch: an empty pass (the
	 * polling loop) costs nothing more than a flag */
	if (t->in_pass && !nm_tbuf_pass && t->tbuf) {
		nm_tbuf_pass = t->tbuf;
		gdak_trace_batch_begin(nm_tbuf_pass);
	}
	return t->tbuf;
#else
	return NULL;
#endif
}

struct add_arg {
	struct nm_thread *t;
	struct nm_qp *qp;
	int ret;
};

static void add_on_thread(void *p)
{
	struct add_arg *a = p;
	struct nm_thread *t = a->t;

	if (t->nqps == t->qcap) {
		uint32_t cap = t->qcap ? t->qcap * 2 : 64;
		struct nm_qp **q = realloc(t->qps, cap * sizeof(*q));
		struct nm_qp **ac;

		if (!q) {
			a->ret = -ENOMEM;
			return;
		}
		t->qps = q;
		ac = realloc(t->act, cap * sizeof(*ac));
		if (!ac) {
			a->ret = -ENOMEM;
			return;
		}
		t->act = ac;
		t->qcap = cap;
	}
	a->qp->thr_slot = t->nqps;
	a->qp->on_thread = true;
	t->qps[t->nqps++] = a->qp;
	activate(t, a->qp);
	wake(t);
}

void nm_thread_add_qp(struct nm_thread *t, struct nm_qp *qp)
{
	struct add_arg a = {.t = t, .qp = qp};

	nm_thread_call(t, add_on_thread, &a);
	if (a.ret)
		GDAK_ERR("qp", qp->id, "NIC thread %u cannot take the QP: %s", t->id,
			 gdak_strerror(a.ret));
}

static void del_on_thread(void *p)
{
	struct add_arg *a = p;
	struct nm_thread *t = a->t;
	struct nm_qp *qp = a->qp;

	if (!qp->on_thread)
		return;
	for (uint32_t i = 0; i < t->nact; i++) {
		if (t->act[i] == qp) {
			deactivate_at(t, i);
			break;
		}
	}
	t->qps[qp->thr_slot] = t->qps[--t->nqps];
	t->qps[qp->thr_slot]->thr_slot = qp->thr_slot;
	qp->on_thread = false;
}

void nm_thread_del_qp(struct nm_thread *t, struct nm_qp *qp)
{
	struct add_arg a = {.t = t, .qp = qp};
	nm_thread_call(t, del_on_thread, &a);
}

void nm_thread_kick(struct nm_qp *qp)
{
	struct nm_thread *t = qp->thr;

	if (!t || inherited(t))
		return;
	if (cur_thread == t && qp->on_thread) {
		/* e.g. from a transport's ev_io callback, or an inline run:
		 * poll again at once */
		nm_thread_activate(qp);
		return;
	}
	atomic_store(&t->kicked, 1);
	ev_async_send(t->loop, &t->async);
}

/* ---- inline runs -------------------------------------------------------------------- */

/*
 * The engine work of thread t run by the calling thread (a verbs program's
 * post_send or poll_cq), as rxe runs its requester in the poster's system
 * call: only when t's engine lock is free right now - t is waiting in the
 * kernel, or between two of its passes - so nothing ever waits for it.
 * pre(arg) first (e.g. the device's receive socket, a watch callback of
 * thread t), then qp (NULL: none) is made active and up to
 * NM_INLINE_PASSES passes of t's active QPs run, exactly the passes t
 * would run: same rings, same doorbell checks, traces into t's buffer,
 * strict checks and fault injection alike.  Afterwards t is left as it
 * would have left itself: blocked again if may_block says so, else woken
 * (an ev_async) to go on; also woken when a deadline was armed before the
 * time t's wait ends (nm_thread_deadline).  1: done; 0: not run (the lock
 * was taken, or the caller is a NIC thread or already in an inline run) -
 * the caller kicks instead.
 */
int nm_thread_try_inline(struct nm_thread *t, struct nm_qp *qp, void (*pre)(void *), void *arg)
{
	bool need;
	int wake_tx;
	void *snd;

	if (!t || cur_thread)
		return 0;
	if (inherited(t)) {
		inherited_warn(t, "post_send / poll_cq");
		return 0;
	}
	if (pthread_mutex_trylock(&t->elock)) {
		atomic_fetch_add_explicit(&inline_busy, 1, memory_order_relaxed);
		return 0;
	}
	cur_thread = t;
	in_inline = true;
	t->inl_runs++;
	atomic_fetch_add_explicit(&inline_runs, 1, memory_order_relaxed);
	if (pre)
		pre(arg);
	if (qp && qp->on_thread)
		activate(t, qp);
	/* a post: one pass executes its WQEs and sends their packets, and
	 * whatever the engine left (a full socket) wakes the thread below;
	 * an empty poll: passes while they find work */
	for (int k = 0; k < (qp ? 1 : NM_INLINE_PASSES); k++)
		if (!pass(t))
			break;
	/* the run's packets leave after the lock is let go (tr_udp.c): a
	 * poster preempted in its sendmmsg then holds up no NIC thread */
	wake_tx = 0;
	snd = nm_tr_udp_inline_detach(&wake_tx);
	need = t->timer_kick || wake_tx;
	t->timer_kick = false;
	if (!t->sleeping && t->wait_due != 0) {
		/* woken by what the run did (nm_thread_activate) while libev
		 * waits: back to blocking, or tell it to poll */
		if (may_block(t)) {
			ev_idle_stop(t->loop, &t->idle);
			t->sleeping = true;
		} else {
			need = true;
		}
	} else if (t->sleeping && !may_block(t)) {
		wake(t);
		need = true;
	}
	in_inline = false;
	cur_thread = NULL;
	pthread_mutex_unlock(&t->elock);
	if (snd)
		(void)nm_tr_udp_inline_send(snd);
	if (need) {
		atomic_fetch_add_explicit(&inline_wakes, 1, memory_order_relaxed);
		ev_async_send(t->loop, &t->async);
	}
	return 1;
}

void nm_thread_deadline(struct nm_thread *t, uint64_t in_ns)
{
	/* only an inline run needs it: on the thread itself libev counts the
	 * timer in before it waits again */
	if (!in_inline || cur_thread != t)
		return;
	if (nm_now_ns() + in_ns < t->wait_due)
		t->timer_kick = true;
}

void nm_thread_hold(struct nm_thread *t, int on)
{
	if (on) {
		pthread_mutex_lock(&t->elock);
	} else {
		pthread_mutex_unlock(&t->elock);
		/* what waited meanwhile (kicks, packets) is the thread's again */
		ev_async_send(t->loop, &t->async);
	}
}

/*
 * Test hook: park thread t - it lets go of its engine lock and waits on a
 * condition until unparked, so the engine runs only in inline runs, which
 * then always find the lock free.  What a test needs to show, without any
 * timing, that post_send and poll_cq drive the engine themselves.  The
 * park is a command run on t (nm_thread_call from a helper thread, which
 * waits until it ends); nm_thread_park returns once t is parked.
 */
static struct {
	pthread_mutex_t m;
	pthread_cond_t c;
	int want, in;
	pthread_t helper;
	struct nm_thread *t;
} park = { .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER };

static void park_on_thread(void *arg)
{
	struct nm_thread *t = arg;

	pthread_mutex_unlock(&t->elock);
	pthread_mutex_lock(&park.m);
	park.in = 1;
	pthread_cond_broadcast(&park.c);
	while (park.want)
		pthread_cond_wait(&park.c, &park.m);
	park.in = 0;
	pthread_mutex_unlock(&park.m);
	pthread_mutex_lock(&t->elock);
	/* whatever came meanwhile: look at every QP */
	atomic_store(&t->kicked, 1);
}

static void *park_helper(void *arg)
{
	nm_thread_call(arg, park_on_thread, arg);
	return NULL;
}

int nm_thread_park(struct nm_thread *t, int on)
{
	int ret = 0;

	pthread_mutex_lock(&park.m);
	if (on && !park.want) {
		park.want = 1;
		park.t = t;
		ret = -pthread_create(&park.helper, NULL, park_helper, t);
		if (ret)
			park.want = 0;
		while (!ret && !park.in)
			pthread_cond_wait(&park.c, &park.m);
	} else if (!on && park.want) {
		park.want = 0;
		pthread_cond_broadcast(&park.c);
		pthread_mutex_unlock(&park.m);
		pthread_join(park.helper, NULL);
		return 0;
	} else {
		ret = -EALREADY;
	}
	pthread_mutex_unlock(&park.m);
	return ret;
}

bool nm_thread_inline(void)
{
	return in_inline;
}

uint64_t nm_thread_inline_runs(void)
{
	return atomic_load_explicit(&inline_runs, memory_order_relaxed);
}

uint64_t nm_thread_inline_forked(void)
{
	return atomic_load_explicit(&inline_forked, memory_order_relaxed);
}

uint64_t nm_thread_inline_busy(void)
{
	return atomic_load_explicit(&inline_busy, memory_order_relaxed);
}

/* ---- engine ------------------------------------------------------------------------ */

static void stop_on_thread(void *p)
{
	struct nm_thread *t = p;
	ev_idle_stop(t->loop, &t->idle);
	ev_timer_stop(t->loop, &t->timer);
	ev_timer_stop(t->loop, &t->wd);
	ev_prepare_stop(t->loop, &t->prep);
	ev_async_stop(t->loop, &t->async);
	ev_break(t->loop, EVBREAK_ALL);
}

static void thread_fini(struct nm_thread *t)
{
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->elock);
	pthread_cond_destroy(&t->cond);
	if (t->loop)
		ev_loop_destroy(t->loop);
	free(t->qps);
	free(t->act);
}

static int thread_start(struct nm_thread *t, uint32_t id, const struct nm_sched *sc)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->id = id;
	t->sched = *sc;
	pthread_once(&fork_once, fork_register);
	t->fork_gen = atomic_load_explicit(&fork_gen, memory_order_relaxed);
	pthread_mutex_init(&t->lock, NULL);
	{
		/* the holder other than the thread is an inline run, a few
		 * microseconds: a woken thread spins for it rather than sleep
		 * and wait to be scheduled again */
		pthread_mutexattr_t ma;

		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
		pthread_mutex_init(&t->elock, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	t->wait_due = UINT64_MAX;
	pthread_cond_init(&t->cond, NULL);
	t->cmds_tail = &t->cmds;
	t->loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
	if (!t->loop) {
		thread_fini(t);
		return -ENOMEM;
	}
	ev_set_userdata(t->loop, t);
	ev_set_loop_release_cb(t->loop, release_cb, acquire_cb);
	ev_idle_init(&t->idle, idle_cb);
	ev_async_init(&t->async, async_cb);
	ev_timer_init(&t->timer, timer_cb, 0.001, 0.);
	ev_timer_init(&t->wd, wd_cb, NM_WD_NS * 1e-9, 0.);
	ev_prepare_init(&t->prep, prepare_cb);
	ev_async_start(t->loop, &t->async);
	ev_prepare_start(t->loop, &t->prep);
	t->sleeping = true;	/* nothing to poll until a QP arrives */
	ret = pthread_create(&t->tid, NULL, thread_main, t);
	if (ret) {
		thread_fini(t);
		return -ret;
	}
	/* the policy is in place (or refused, logged) before the first QP:
	 * a program that looks at the thread sees what it runs under */
	pthread_mutex_lock(&t->lock);
	while (!t->started)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* Stops and frees the eng.n threads started so far.  Under eng.lock. */
static void stop_threads_locked(void)
{
	for (unsigned i = 0; i < eng.n; i++) {
		/* a fork's child has the structures but not the thread */
		if (!inherited(&eng.thr[i])) {
			nm_thread_call(&eng.thr[i], stop_on_thread, &eng.thr[i]);
			pthread_join(eng.thr[i].tid, NULL);
		}
		thread_fini(&eng.thr[i]);
	}
	free(eng.thr);
	eng.thr = NULL;
	eng.n = 0;
}

int nm_engine_get(void)
{
	int ret = 0;

	pthread_mutex_lock(&eng.lock);
	if (eng.refs++ == 0) {
		unsigned n = atomic_load(&nm_cfg.threads);
		struct nm_sched sc;
		char sbuf[32];

		if (!n)
			n = 1;
		/* read at every engine start: a program that closed every
		 * context may open again under another setting */
		ret = nm_sched_parse(gdak_env_raw("GDAK_NIC_SCHED"), &sc);
		eng.thr = ret ? NULL : calloc(n, sizeof(*eng.thr));
		if (!ret && !eng.thr) {
			ret = -ENOMEM;
		} else if (!ret) {
			for (eng.n = 0; eng.n < n; eng.n++) {
				ret = thread_start(&eng.thr[eng.n], eng.n, &sc);
				if (ret)
					break;
			}
		}
		if (ret) {
			GDAK_ERR("nic", 0, "cannot start NIC threads: %s", gdak_strerror(ret));
			stop_threads_locked();
			eng.refs = 0;
		} else {
			GDAK_INFO("nic", 0,
				  "%u NIC thread(s), %s polling, strict %s, scheduling %s", n,
				  atomic_load(&nm_cfg.poll) == GDAK_NIC_POLL_SPIN ? "spin"
										  : "adaptive",
				  nm_strict() ? "on" : "off",
				  nm_sched_str(&sc, sbuf, sizeof(sbuf)));
		}
	}
	pthread_mutex_unlock(&eng.lock);
	return ret;
}

void nm_engine_put(void)
{
	pthread_mutex_lock(&eng.lock);
	if (--eng.refs == 0) {
		GDAK_INFO("nic", 0,
			  "engine: %llu inline runs (%llu woke the NIC thread), %llu not run "
			  "(engine busy), %llu blocks",
			  (unsigned long long)nm_thread_inline_runs(),
			  (unsigned long long)atomic_load(&inline_wakes),
			  (unsigned long long)nm_thread_inline_busy(),
			  (unsigned long long)nm_thread_blocks());
		stop_threads_locked();
		nm_trace_engine_stopped();
	}
	pthread_mutex_unlock(&eng.lock);
}

uint64_t nm_thread_work_yields(void)
{
	return atomic_load_explicit(&work_yields, memory_order_relaxed);
}

uint64_t nm_thread_blocks(void)
{
	return atomic_load_explicit(&blocks, memory_order_relaxed);
}

unsigned nm_engine_nthreads(void)
{
	unsigned n;
	pthread_mutex_lock(&eng.lock);
	n = eng.refs ? eng.n : 0;
	pthread_mutex_unlock(&eng.lock);
	return n;
}

struct nm_thread *nm_engine_pick(int nic_thread)
{
	unsigned i;

	if (nic_thread >= 0)
		i = (unsigned)nic_thread % eng.n;
	else
		i = atomic_fetch_add(&eng.rr, 1) % eng.n;
	return &eng.thr[i];
}

void nm_engine_sync(void)
{
	uint64_t snap[64];
	unsigned n;

	/* under eng.lock: the threads cannot be stopped and freed meanwhile
	 * (a context closing on another thread); no NIC thread takes it */
	pthread_mutex_lock(&eng.lock);
	n = eng.refs ? (eng.n < 64 ? eng.n : 64) : 0;
	for (unsigned i = 0; i < n; i++) {
		snap[i] = atomic_load_explicit(&eng.thr[i].qseq, memory_order_acquire);
		if (!pthread_equal(pthread_self(), eng.thr[i].tid) && !inherited(&eng.thr[i]))
			ev_async_send(eng.thr[i].loop, &eng.thr[i].async);
	}
	for (unsigned i = 0; i < n; i++) {
		struct timespec ts = {0, 20000};
		if (pthread_equal(pthread_self(), eng.thr[i].tid) || inherited(&eng.thr[i]))
			continue;
		while (atomic_load_explicit(&eng.thr[i].qseq, memory_order_acquire) == snap[i])
			nanosleep(&ts, NULL);
	}
	pthread_mutex_unlock(&eng.lock);
}
