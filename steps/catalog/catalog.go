// Package catalog is the ordered list of lockstep's steps: what the lab's picker, the matrix and
// the tests iterate. Each entry pairs a step package's code with its description and the verdicts
// it is expected to earn, the rows of the matrix in README.md.
package catalog

import (
	"fmt"
	"strconv"
	"strings"

	naive "github.com/lockstep-lab/lockstep/steps/01_naive"
	setnx "github.com/lockstep-lab/lockstep/steps/02_setnx"
	finally "github.com/lockstep-lab/lockstep/steps/03_finally"
	atomicttl "github.com/lockstep-lab/lockstep/steps/04_atomic_ttl"
	owner "github.com/lockstep-lab/lockstep/steps/05_owner"
	reentrant "github.com/lockstep-lab/lockstep/steps/06_reentrant"
	spin "github.com/lockstep-lab/lockstep/steps/07_spin"
	watchdog "github.com/lockstep-lab/lockstep/steps/08_watchdog"
	luaunlock "github.com/lockstep-lab/lockstep/steps/09_lua_unlock"
	retry "github.com/lockstep-lab/lockstep/steps/10_retry_jitter"
	hashowner "github.com/lockstep-lab/lockstep/steps/11_hash_owner"
	leaseguard "github.com/lockstep-lab/lockstep/steps/12_lease_guard"
	pubsub "github.com/lockstep-lab/lockstep/steps/13_pubsub"
	fair "github.com/lockstep-lab/lockstep/steps/14_fair"
	redlock "github.com/lockstep-lab/lockstep/steps/15_redlock"
	fencing "github.com/lockstep-lab/lockstep/steps/16_fencing"
	atomicstock "github.com/lockstep-lab/lockstep/steps/17_atomic_stock"
	aspect "github.com/lockstep-lab/lockstep/steps/side_aspect"
	delex "github.com/lockstep-lab/lockstep/steps/side_delex"
	getset "github.com/lockstep-lab/lockstep/steps/side_getset"
	wait "github.com/lockstep-lab/lockstep/steps/side_wait"

	"github.com/lockstep-lab/lockstep/steps"
)

type k = steps.Kind

var (
	overlap  = steps.Overlap
	oversold = steps.Oversold
	foreign  = steps.ForeignRelease
	renewal  = steps.ForeignRenewal
	stuck    = steps.Stuck
	lost     = steps.LostSales
	reentry  = steps.ReentryFailed
	flood    = steps.Flood
	starved  = steps.Starved
	idle     = steps.Idle
)

// Steps lists every step in order.
var Steps = []*steps.Step{
	{
		Slug: "01_naive", Number: 1, NoLock: true,
		Title:     "No lock: GET stock, SET stock-1",
		Claim:     "The order endpoint reads the stock and writes it back, one unit less.",
		Article:   "000 — 代码复现 (the overselling submitOrder)",
		Fixes:     "Nothing yet: this is the endpoint the articles start from.",
		Breaks:    "Two buyers read the same stock and both sell the same unit.",
		Hint:      "Start many buyers against a small stock (contention).",
		Lesson:    "GET → work → SET is not atomic. Concurrent buyers read the same number and each confirms an order for the same unit: the shop oversells. Something must let only one buyer into that section at a time.",
		BreakWith: steps.Contention,
		Shows:     "overlap",
		New:       naive.New, Order: naive.Order, Source: naive.Source,
		Expect: map[steps.Scenario][]k{
			steps.Contention:  {overlap, oversold},
			steps.Slow:        {overlap, oversold},
			steps.Reentrant:   {overlap},
			steps.Pause:       {overlap, oversold},
			steps.Failover:    {overlap, oversold},
			steps.Partition:   {overlap, oversold},
			steps.TwoRequests: {overlap, oversold},
			steps.Restart:     {overlap, oversold},
			steps.ClockSkew:   {overlap, oversold},
		},
	},
	{
		Slug: "02_setnx", Number: 2, Base: "01_naive",
		Title:     "SETNX lock, DEL at the end",
		Claim:     "Only the buyer whose SETNX succeeds may sell; the others are refused.",
		Article:   "000 — 引入分布式锁 (submitOrderV1)",
		Fixes:     "Mutual exclusion: SETNX lets exactly one buyer in.",
		Breaks:    "Any early return or crash skips the DEL, and the lock never expires: the shop is stuck.",
		Hint:      "Make the holder's work fail (error) and watch every later buyer get refused.",
		Lesson:    "The unlock is ordinary code at the end of the handler. An error returns early, the key stays, and with no TTL every later order is refused forever. The unlock has to run on every path.",
		BreakWith: steps.Error,
		Shows:     "held",
		New:       setnx.New, Order: setnx.Order, Source: setnx.Source,
		Expect: map[steps.Scenario][]k{
			steps.Contention: {lost},
			steps.Error:      {stuck},
			steps.Crash:      {stuck},
			steps.Reentrant:  {reentry},
			steps.Failover:   {overlap, oversold},
			steps.Restart:    {overlap, oversold},
			steps.LostReply:  {stuck, lost},
		},
	},
	{
		Slug: "03_finally", Number: 3, Base: "02_setnx",
		Title:     "Unlock in a defer (try/finally)",
		Claim:     "Whatever happens in the handler, the lock is deleted on the way out.",
		Article:   "000 — 引入try-finally代码块 (submitOrderV2)",
		Fixes:     "Errors no longer leave the lock behind: the defer always deletes it.",
		Breaks:    "A process that dies runs no defer; the key has no TTL, so the lock is held forever.",
		Hint:      "Crash the holder inside the critical section.",
		Lesson:    "finally only runs in a process that is alive. A crash, a kill -9 or a lost machine leaves the key, and nothing in Redis will ever remove it. The lock needs an expiry that Redis enforces on its own.",
		BreakWith: steps.Crash,
		Shows:     "crashed",
		New:       finally.New, Order: finally.Order, Source: finally.Source,
		Expect: map[steps.Scenario][]k{
			steps.Contention: {lost},
			steps.Crash:      {stuck},
			steps.Reentrant:  {reentry},
			steps.Failover:   {overlap, oversold},
			steps.Restart:    {overlap, oversold},
			steps.LostReply:  {stuck, lost},
		},
	},
	{
		Slug: "04_atomic_ttl", Number: 4, Base: "03_finally",
		Title:     "SET NX PX: lock and TTL in one command",
		Claim:     "The lock expires on its own, so a dead holder cannot block the shop forever.",
		Article:   "000 — 引入Redis超时机制, 加锁操作原子化, 抽取公共组件 (v3, v4, tryLock/releaseLock)",
		Fixes:     "A crashed holder's lock expires after the TTL; SET NX PX sets key and expiry atomically.",
		Breaks:    "A holder slower than the TTL loses the lock without knowing, and then DELs the next holder's lock.",
		Hint:      "Make the holder slow (s): its work goes on until another buyer is in.",
		Lesson:    "A TTL is a guess about how long the work takes. When the work outlives it, Redis hands the lock to someone else while the first holder is still inside — and the first holder's DEL then deletes the second holder's lock. Unlock must check whose lock it deletes.",
		BreakWith: steps.Slow,
		Shows:     "expired",
		New:       atomicttl.New, Order: atomicttl.Order, Source: atomicttl.Source,
		Expect: map[steps.Scenario][]k{
			steps.Contention: {lost},
			steps.Slow:       {overlap, oversold, foreign},
			steps.UnlockRace: {foreign},
			steps.Reentrant:  {reentry},
			steps.Pause:      {overlap, oversold},
			steps.Failover:   {overlap, oversold},
			steps.Partition:  {overlap, oversold},
			steps.Restart:    {overlap, oversold},
			steps.LostReply:  {lost},
		},
	},
	{
		Slug: "side_getset", Number: 0, Base: "04_atomic_ttl", Side: true,
		Title:     "Side road: the lock's value is its expiry time (GETSET)",
		Claim:     "The lock stores when it expires; a client that finds that time past takes it over with GETSET.",
		Article:   "002 — 实现原理二 (setnx(lockkey, currenttime+timeout), getSet)",
		Fixes:     "A lock left by a dead holder is taken over by the next client once its time is past, TTL or not.",
		Breaks:    "Whether a lock has expired is decided by the asking client's clock: a client whose clock runs ahead takes over a lock that is still held.",
		Hint:      "Let a second process with a clock 3 × TTL ahead ask while the holder works (clock-skew).",
		Lesson:    "A lock that compares timestamps from different machines trusts every machine's clock with everyone's lock. Leases must be measured by one clock — the lock server's TTL — or as elapsed time on each client's monotonic clock, never by comparing wall clocks.",
		BreakWith: steps.ClockSkew,
		Shows:     "skewed clock",
		New:       getset.New, Order: getset.Order, Source: getset.Source,
		Expect: map[steps.Scenario][]k{
			steps.Contention: {lost},
			steps.Slow:       {overlap, oversold, foreign},
			steps.UnlockRace: {foreign},
			steps.Reentrant:  {reentry},
			steps.Pause:      {overlap, oversold},
			steps.Failover:   {overlap, oversold},
			steps.Partition:  {overlap, oversold},
			steps.Restart:    {overlap, oversold},
			steps.ClockSkew:  {overlap, oversold},
			steps.LostReply:  {lost},
		},
	},
	{
		Slug: "05_owner", Number: 5, Base: "04_atomic_ttl",
		Title:     "Owner token: only the holder deletes",
		Claim:     "The lock stores a random owner token; Unlock deletes only its own lock.",
		Article:   "000 — 实现加锁和解锁归一体化 (ThreadLocal owner)",
		Fixes:     "A slow holder no longer deletes the next holder's lock: GET shows it is not the owner.",
		Breaks:    "GET and DEL are two commands: if the lock expires between them, the DEL still hits the next holder.",
		Hint:      "Freeze the holder between its GET and its DEL (unlock-race).",
		Lesson:    "Check-then-act across two commands is a race. Between the GET that says \"mine\" and the DEL, the lock can expire and be taken; the DEL then removes a lock that is no longer ours. The check and the delete must be one atomic step.",
		BreakWith: steps.UnlockRace,
		Shows:     "GET owner",
		New:       owner.New, Order: owner.Order, Source: owner.Source,
		Expect: map[steps.Scenario][]k{
			steps.Contention: {lost},
			steps.Slow:       {overlap, oversold},
			steps.UnlockRace: {foreign},
			steps.Reentrant:  {reentry},
			steps.Pause:      {overlap, oversold},
			steps.Failover:   {overlap, oversold},
			steps.Partition:  {overlap, oversold},
			steps.Restart:    {overlap, oversold},
			steps.LostReply:  {lost},
		},
	},
	{
		Slug: "06_reentrant", Number: 6, Base: "05_owner",
		Title:     "Reentrant: count the holder's own holds",
		Claim:     "A holder may take its own lock again (service A → service B); the last Unlock frees it.",
		Article:   "000 — 可重入性分析, 解决可重入性问题 (ThreadLocal counter)",
		Fixes:     "A nested Lock by the holder succeeds instead of being refused.",
		Breaks:    "Buyers who find the lock taken are still turned away while units remain.",
		Hint:      "Start many buyers at once (contention) and count the refused orders.",
		Lesson:    "A non-blocking lock turns contention into refusals: buyers are sent away although units remain. To sell them, a buyer must wait for the lock instead of giving up.",
		BreakWith: steps.Contention,
		Shows:     "refused",
		New:       reentrant.New, Order: reentrant.Order, Source: reentrant.Source,
		Expect: map[steps.Scenario][]k{
			steps.Contention:  {lost},
			steps.Slow:        {overlap, oversold},
			steps.UnlockRace:  {foreign},
			steps.Pause:       {overlap, oversold},
			steps.Failover:    {overlap, oversold},
			steps.Partition:   {overlap, oversold},
			steps.TwoRequests: {overlap, oversold},
			steps.Restart:     {overlap, oversold},
			steps.LostReply:   {lost},
		},
	},
	{
		Slug: "07_spin", Number: 7, Base: "06_reentrant",
		Title:     "Blocking by spinning",
		Claim:     "A buyer who finds the lock taken retries until it gets it: no order is refused.",
		Article:   "000 — 实现锁的阻塞性 (for(;;) setIfAbsent)",
		Fixes:     "Contention no longer loses sales: every buyer waits its turn.",
		Breaks:    "A holder slower than the TTL still loses its lock; and every waiter floods Redis with SET NX.",
		Hint:      "Run the load scenario and count commands per order, or make the holder slow.",
		Lesson:    "Spinning trades refusals for load: each waiter sends a command per round trip for as long as it waits (the ~ lanes), thousands per order. And the TTL still guesses the work's length: a slow holder (s) loses its lock, until step 8 renews it.",
		BreakWith: steps.Load,
		Shows:     "spins",
		New:       spin.New, Order: spin.Order, Source: spin.Source,
		Expect: map[steps.Scenario][]k{
			steps.Slow:        {overlap, oversold},
			steps.UnlockRace:  {foreign},
			steps.Pause:       {overlap, oversold},
			steps.Failover:    {overlap, oversold},
			steps.Load:        {flood},
			steps.Partition:   {overlap, oversold},
			steps.TwoRequests: {overlap, oversold},
			steps.Greedy:      {starved},
			steps.Restart:     {overlap, oversold},
		},
	},
	{
		Slug: "08_watchdog", Number: 8, Base: "07_spin",
		Title:     "Watchdog: renew the TTL while holding",
		Claim:     "While the holder works, a watchdog pushes the TTL ahead, so a slow holder keeps its lock.",
		Article:   "000 — 解决锁失效问题 (UpdateLockTimeTask); 003 — watchdog renewal",
		Fixes:     "Slow work no longer loses the lock: the lease is renewed every TTL/3.",
		Breaks:    "Unlock is still GET then DEL; a freeze between them deletes the next holder's lock. A stop-the-world pause stops the watchdog too, and its PEXPIRE, which checks no owner, then extends the next holder's lock.",
		Hint:      "Freeze the holder between its GET and its DEL (unlock-race).",
		Lesson:    "The watchdog keeps a live, running holder's lease; it cannot help a holder that is frozen, and it does nothing for the race inside Unlock. Worse, its PEXPIRE checks no owner: a holder back from a pause or a partition renews the lock the next buyer now holds (foreign-renewal). Compare-and-delete must happen inside Redis, in one script; so must the renewal's owner check (step 11).",
		BreakWith: steps.UnlockRace,
		Shows:     "expired",
		New:       watchdog.New, Order: watchdog.Order, Source: watchdog.Source,
		Expect: map[steps.Scenario][]k{
			steps.UnlockRace:  {foreign},
			steps.Pause:       {overlap, oversold, renewal},
			steps.Failover:    {overlap, oversold},
			steps.Load:        {flood},
			steps.Partition:   {overlap, oversold, renewal},
			steps.TwoRequests: {overlap, oversold},
			steps.Greedy:      {starved},
			steps.Restart:     {overlap, oversold},
		},
	},
	{
		Slug: "09_lua_unlock", Number: 9, Base: "08_watchdog",
		Title:     "Atomic unlock in Lua",
		Claim:     "Unlock compares the owner and deletes in one Lua script: it can never delete another's lock.",
		Article:   "000 — 解锁操作原子化 (LUA_UN_LOCK); 001 — Lua unlock",
		Fixes:     "The unlock race is gone: Redis runs the check and the delete as one command.",
		Breaks:    "Everything still lives on one Redis: a failover to a replica that never saw the lock lets a second buyer in. A stop-the-world pause outlasts any lease.",
		Hint:      "Fail the lock primary over right after the holder's lock write.",
		Lesson:    "Replication is asynchronous: the primary acknowledges the lock before the replica has it. When the primary dies, the promoted replica has no lock and grants it again. No single-Redis lock survives that; a pause past the lease breaks it too. Fencing tokens, checked by the inventory, are what make a lost lock harmless.",
		BreakWith: steps.Failover,
		Shows:     "Lua unlock",
		New:       luaunlock.New, Order: luaunlock.Order, Source: luaunlock.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:       {overlap, oversold, renewal},
			steps.Failover:    {overlap, oversold},
			steps.Load:        {flood},
			steps.Partition:   {overlap, oversold, renewal},
			steps.TwoRequests: {overlap, oversold},
			steps.Greedy:      {starved},
			steps.Restart:     {overlap, oversold},
		},
	},
	{
		Slug: "side_delex", Number: 0, Base: "09_lua_unlock", Side: true,
		Title:     "Side road: compare-and-delete in one command (DELEX IFEQ)",
		Claim:     "Unlock is one command, DELEX key IFEQ token: Redis deletes the key only if it still holds the token, with no Lua.",
		Article:   "not in the articles: the Redis and Valkey lock pages (DELEX, Redis 8.4 and Valkey 9.2); 002's unlock.lua makes the same 0",
		Fixes:     "Nothing step 09 had not: the check and the delete are still one atomic step, now a command the server knows instead of a script.",
		Breaks:    "What breaks step 09: a failover to a replica that never saw the lock, a pause past the lease. And DELEX's 0 means both \"not yours\" and \"already gone\".",
		Hint:      "Fail the lock primary over right after the holder's lock write.",
		Lesson:    "A built-in command does what the script did, no more: the same atomic compare-and-delete, the same row of the matrix. It still answers 0 for a lock another holds and for one that expired with nobody in it (002's unlock script made the same mistake), and on one Redis a failover still hands the lock out twice.",
		BreakWith: steps.Failover,
		Shows:     "DELEX",
		Needs:     delex.Needs,
		New:       delex.New, Order: delex.Order, Source: delex.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:       {overlap, oversold, renewal},
			steps.Failover:    {overlap, oversold},
			steps.Load:        {flood},
			steps.Partition:   {overlap, oversold, renewal},
			steps.TwoRequests: {overlap, oversold},
			steps.Greedy:      {starved},
			steps.Restart:     {overlap, oversold},
		},
	},
	{
		Slug: "side_wait", Number: 0, Base: "09_lua_unlock", Side: true,
		Title:        "Side road: wait for a replica (WAIT 1), or refuse the lock",
		Claim:        "After the lock write, WAIT 1 TTL/4: the lock is taken only once a replica acknowledged it, so a failover promotes a replica that has it.",
		Article:      "not in the articles: Redisson's checkLockSyncedSlaves (WAIT after the lock write; WAITAOF with AOF on)",
		Fixes:        "A failover no longer hands out a lock the replica never saw: an acquisition no replica acknowledged is given back and refused.",
		Breaks:       "A node that restarts without persistence forgets the lock with its replica; a pause past the lease; and every acquisition costs a round trip, and is refused while the replica lags.",
		Hint:         "Restart the lock node without persistence while the holder works.",
		Lesson:       "WAIT says how many replicas received the write, not that the cluster agreed on it: a failover to a replica that has the lock keeps it, one to a replica without it is refused before anyone is inside. But a restart without persistence forgets the lock on the primary and its replica alike, a pause still outlasts the lease, and while the replica lags every lock is refused. Redis's docs: WAIT does not make Redis strongly consistent.",
		BreakWith:    steps.Restart,
		Shows:        "WAIT",
		NeedsReplica: true,
		New:          wait.New, Order: wait.Order, Source: wait.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:       {overlap, oversold, renewal},
			steps.Load:        {flood},
			steps.Partition:   {overlap, oversold, renewal},
			steps.TwoRequests: {overlap, oversold},
			steps.Greedy:      {starved},
			steps.Restart:     {overlap, oversold},
		},
	},
	{
		Slug: "10_retry_jitter", Number: 10, Base: "09_lua_unlock",
		Title:     "Retry with a random back-off",
		Claim:     "A buyer who finds the lock taken waits a pause with jitter and tries again, for a bounded time: no flood.",
		Article:   "002 — lockAndRetry (fixed + random sleep, bounded retries); 001 — the retry loop",
		Fixes:     "Waiters no longer flood Redis: each tries once per pause, and gives up after 10 leases.",
		Breaks:    "A waiter asleep in its pause does not see the lock come free: the lock sits idle while buyers wait. And the hold count is per process.",
		Hint:      "Run the load scenario and watch the gaps between holders; or start a second request in the holder's process.",
		Lesson:    "Back-off cures the flood by not asking — so nobody is asking when the lock comes free. The lock idles for half a pause on average after every release. Waking a waiter at the release needs Redis to tell it (pub/sub). And a count kept per process lets a second request of the same server straight in: ownership must follow the request.",
		BreakWith: steps.Load,
		Shows:     "waits",
		New:       retry.New, Order: retry.Order, Source: retry.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:       {overlap, oversold, renewal},
			steps.Failover:    {overlap, oversold},
			steps.Load:        {idle},
			steps.Partition:   {overlap, oversold, renewal},
			steps.TwoRequests: {overlap, oversold},
			steps.Greedy:      {starved},
			steps.Restart:     {overlap, oversold},
		},
	},
	{
		Slug: "11_hash_owner", Number: 11, Base: "10_retry_jitter",
		Title:     "Hash lock, owned by the request",
		Claim:     "The lock is a hash of owner → holds, kept by Lua that checks the owner; the owner is the request, not the process.",
		Article:   "002 — lock.lua / unlock.lua (hsetnx owner + count); 003 — Redisson's hash lock",
		Fixes:     "A second request of the same process no longer walks in: it is another owner and waits. Renewal checks the owner.",
		Breaks:    "The watchdog renews blindly on: a holder cut off from Redis keeps working while its lease runs out, then writes.",
		Hint:      "Cut the holder off from the lock server inside its work (partition).",
		Lesson:    "Ownership now follows the request, and every script checks it — the renewal too, so a holder back from a pause or a partition extends nobody else's lock (08–10's bare PEXPIRE did: foreign-renewal). But the holder still cannot tell that its lease ran out: its renewals fail in silence and it writes anyway. A lock whose lease can be lost must tell its holder to stop.",
		BreakWith: steps.Partition,
		Shows:     "Lua unlock",
		New:       hashowner.New, Order: hashowner.Order, Source: hashowner.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:     {overlap, oversold},
			steps.Failover:  {overlap, oversold},
			steps.Load:      {idle},
			steps.Partition: {overlap, oversold},
			steps.Greedy:    {starved},
			steps.Restart:   {overlap, oversold},
		},
	},
	{
		Slug: "side_aspect", Number: 0, Base: "11_hash_owner", Side: true,
		Title:     "Side road: the lock as an around-advice (WithLock)",
		Claim:     "WithLock(ctx, locker, key, fn) takes the lock with 002's retries, runs fn, and gives the lock back: the caller cannot forget the unlock.",
		Article:   "002 — 基于注解切面简化实现分布式锁 (@RedisLock, RedisLockAspect.around)",
		Fixes:     "Nothing step 11 had not: the lock and its unlock move into one helper, with a per-request map of key → request id for nested calls.",
		Breaks:    "The unlock runs on the normal path only: an error leaves the lock taken, and the watchdog renews it for as long as the process lives. 30 short tries turn buyers away and flood Redis.",
		Hint:      "Make the holder's work fail (error) and watch every later buyer get refused.",
		Lesson:    "An around-advice without a finally is step 02's handler again, inside a helper: every error path skips the unlock. With a watchdog it is worse than a lock left to its TTL — the lease is renewed for as long as the process lives. The fix is one word, defer: step 03's try/finally, which step 11, this road's base, already has.",
		BreakWith: steps.Error,
		Shows:     "renew",
		New:       aspect.New, Order: aspect.Order, Source: aspect.Source,
		Expect: map[steps.Scenario][]k{
			steps.Contention: {lost},
			steps.Error:      {stuck},
			steps.Pause:      {overlap, oversold},
			steps.Failover:   {overlap, oversold},
			steps.Load:       {flood},
			steps.Partition:  {overlap, oversold},
			steps.Greedy:     {starved},
			steps.Restart:    {overlap, oversold},
			steps.LostReply:  {lost},
		},
	},
	{
		Slug: "12_lease_guard", Number: 12, Base: "11_hash_owner",
		Title:     "A lease guard that stops the work",
		Claim:     "When the holder can no longer prove its lease, its request's context ends, and the order does not write.",
		Article:   "001/002/003 name the problem; the answer is bsm/redislock's and rueidislock's lease context",
		Fixes:     "A holder cut off from Redis stops before its lease could have run out, instead of writing after another got in.",
		Breaks:    "A stop-the-world pause after the last check: the write is already on its way, and no check inside the process can stop it.",
		Hint:      "Pause the holder just before its stock write leaves.",
		Lesson:    "The guard stops a holder that is alive enough to notice. A process frozen between its last check and its write (a GC pause, a VM stall) notices nothing: the write lands after its lease, beside the next holder's. No lock can prevent that; the resource must refuse the stale write (fencing tokens).",
		BreakWith: steps.Pause,
		Shows:     "frozen",
		New:       leaseguard.New, Order: leaseguard.Order, Source: leaseguard.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:    {overlap, oversold},
			steps.Failover: {overlap, oversold},
			steps.Load:     {idle},
			steps.Greedy:   {starved},
			steps.Restart:  {overlap, oversold},
		},
	},
	{
		Slug: "13_pubsub", Number: 13, Base: "12_lease_guard",
		Title:     "Wait for the release on pub/sub",
		Claim:     "A waiter sleeps until the unlock publishes the release, or the lease could have run out: no polling, no idle lock.",
		Article:   "002 — closing notes (polling wastes work: use publish/subscribe); 003 — Redisson's release channel",
		Fixes:     "The lock no longer sits free while waiters sleep: the release wakes them at once, and a lost message costs at most one lease.",
		Breaks:    "Every release wakes every waiter and the quickest wins: a buyer that asks again at once can pass the others for ever.",
		Hint:      "Let one buyer order again the instant it is done (greedy).",
		Lesson:    "A broadcast wake-up is not a queue. Each release starts a race, the process that asks first wins, and a waiter can lose every race while later askers win. Fairness needs the lock to remember who asked first.",
		BreakWith: steps.Greedy,
		Shows:     "wake-up",
		New:       pubsub.New, Order: pubsub.Order, Source: pubsub.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:    {overlap, oversold},
			steps.Failover: {overlap, oversold},
			steps.Greedy:   {starved},
			steps.Restart:  {overlap, oversold},
		},
	},
	{
		Slug: "14_fair", Number: 14, Base: "13_pubsub",
		Title:     "A fair lock: a line of waiters",
		Claim:     "Waiters queue in Redis in the order they asked; the release tells the first in line, and only it.",
		Article:   "002 — closing notes (the lock is not fair: use a queue); Redisson's RFairLock",
		Fixes:     "No waiter is passed over: a buyer that asks again at once joins the end of the line. One waiter wakes per release, not all.",
		Breaks:    "Still one Redis and a lease: a stop-the-world pause past the lease, or a failover to a replica that never saw the lock, lets two in.",
		Hint:      "Pause the holder just before its stock write leaves.",
		Lesson:    "Fairness and a quiet hand-off make a good lock on one Redis — and none of it helps a holder that is paused after its last check, or a lock the replica never saw. What remains is for the resource to refuse the stale write, and for the lock to live on more than one node.",
		BreakWith: steps.Pause,
		// its line (Q) is drawn where a buyer waits for a held lock (contention, greedy, live
		// buyers); under pause the second buyer comes after the lease ran out and waits for nobody
		Shows: "frozen",
		New:   fair.New, Order: fair.Order, Source: fair.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:    {overlap, oversold},
			steps.Failover: {overlap, oversold},
			steps.Restart:  {overlap, oversold},
		},
	},
	{
		Slug: "15_redlock", Number: 15, Base: "12_lease_guard", Nodes: 3,
		Title:     "Redlock: a majority of three Redis",
		Claim:     "The lock is held only on a majority of three independent nodes, with time left of the lease: one node's failover no longer hands it out.",
		Article:   "001 — 多节点redis实现的分布式锁算法(RedLock); redis.io's Redlock",
		Fixes:     "A failover of one node loses the lock there, but the holder still has a majority and nobody else can get one.",
		Breaks:    "A node that restarts without persistence forgets the lock: with the node the holder missed, a second buyer has a majority too. And a pause still writes late.",
		Hint:      "Restart a lock node the holder holds, when the holder missed another.",
		Lesson:    "A majority protects against a node that fails over or goes away, not against one that comes back having forgotten. Redis's Redlock page asks for fsync on every write, or for a restarted node to stay away for a lease. And no lock, however many nodes it lives on, stops a paused process's stale write: the resource must check a fencing token.",
		BreakWith: steps.Restart,
		Shows:     "nodes",
		New:       redlock.New, Order: redlock.Order, Source: redlock.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:   {overlap, oversold},
			steps.Load:    {idle},
			steps.Greedy:  {starved},
			steps.Restart: {overlap, oversold},
		},
	},
	{
		Slug: "16_fencing", Number: 16, Base: "14_fair",
		Title:     "Fencing tokens: the inventory refuses a stale write",
		Claim:     "Each acquisition takes a rising token; the inventory refuses a read or write whose token is lower than one it has seen.",
		Article:   "the articles stop short of it; Kleppmann's fencing tokens, Redisson's RFencedLock",
		Fixes:     "A holder paused past its lease still gets inside, but its stale write is refused: nothing is oversold.",
		Breaks:    "The token counter lives beside the lock on one Redis: a failover or a restart loses its last increments and hands a token out again.",
		Hint:      "Pause the holder past its lease and watch its write bounce; then fail the lock primary over right after a lock write.",
		Lesson:    "The resource checking for itself is what makes a lost lock harmless: the pause still lets two in, and the stale write bounces. But the token is only as monotonic as the counter behind it: counted on the same Redis that fails over, it repeats, and an equal token passes. A token must come from somewhere that never goes back (a consensus system, or the resource itself).",
		BreakWith: steps.Pause, // the lesson is the refused write; failover then breaks it for real
		Shows:     "stale write refused",
		New:       fencing.New, Order: fencing.Order, Source: fencing.Source,
		Expect: map[steps.Scenario][]k{
			steps.Pause:    {overlap},
			steps.Failover: {overlap, oversold},
			steps.Restart:  {overlap, oversold},
		},
	},
	{
		Slug: "17_atomic_stock", Number: 17, Base: "01_naive", NoLock: true,
		Title:   "No lock: sell in one atomic step",
		Claim:   "After the work, one Lua script on the inventory takes a unit off the shelf only if one is left.",
		Article: "001 — 减库存 (the Lua stock decrement)",
		Fixes:   "Nothing can oversell: no buyer writes back a number it read, so there is no critical section left to protect.",
		Breaks:  "Nothing in the matrix: the shop is the truth, and the shop now decides. The work itself still runs for every buyer.",
		Hint:    "Try everything: crash, pause, fail over, restart. The stock holds.",
		Lesson:  "The endpoint that only decrements a counter needs no lock at all. Correctness belongs to the resource; a lock is for efficiency — keeping work from running twice, or from running when it is pointless — and for the cases a resource cannot check (several resources at once, work outside any store).",
		New:     atomicstock.New, Order: atomicstock.Order, Source: atomicstock.Source,
	},
}

// Find returns the step named by s: its slug ("04_atomic_ttl"), its number ("4", "04") or its
// name without the number ("atomic_ttl").
func Find(s string) (*steps.Step, error) {
	for _, st := range Steps {
		name := st.Slug[strings.IndexByte(st.Slug, '_')+1:]
		if n, err := strconv.Atoi(s); (err == nil && n == st.Number && n > 0) || s == st.Slug || s == name {
			return st, nil
		}
	}
	last, sides := 0, []string{}
	for _, st := range Steps {
		if st.Side {
			sides = append(sides, st.Slug)
		}
		last = max(last, st.Number)
	}
	want := fmt.Sprintf("01…%02d", last)
	if len(sides) > 0 {
		want += ", a side road (" + strings.Join(sides, ", ") + ")"
	}
	return nil, fmt.Errorf("unknown step %q (want %s or a name such as %s)", s, want, Steps[3].Slug)
}
