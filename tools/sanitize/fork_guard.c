/*
 * The fork handler GCC 12's AddressSanitizer runtime lacks, preloaded after it by
 * tools/sanitize.py (`make test-sanitize`).
 *
 * Why: a child forked while another thread of its parent was inside ASan's allocator (a
 * size class's region lock, taken when a thread's cache refills or drains), its thread
 * registry (a thread starting or ending) or its stack depot (a bucket's lock) inherits that
 * lock held by a thread it does not have. Its next allocation of that size class, a thread it
 * starts or its exit-time leak check (which locks every one of them) then waits for ever.
 * glibc's own malloc takes its locks around fork(), so the child of an unsanitized process
 * allocates freely; tests/test_processes.py forks from a process whose emulator threads
 * (stream workers, the kernel pool) are running, and its children hung now and then under
 * the sanitizer only. Stacks of one such child: faulthandler's watchdog thread in
 * AsanThread::ThreadStart -> pthread_getattr_np -> realloc -> SizeClassAllocator64::
 * GetFromAllocator waiting on a region's mutex, the main thread in the exit-time
 * __lsan_do_recoverable_leak_check -> LockAllocator -> ForceLock waiting on the same one;
 * neither held it.
 *
 * LLVM's runtime installs this handler itself since compiler-rt 18 (llvm/llvm-project#75290,
 * "[asan] Install pthread_atfork": asan_posix.cpp BeforeFork/AfterFork): the thread registry,
 * the allocator, then the stack depot, locked before the fork and unlocked after it in both
 * processes. GCC 12's runtime has the same lock functions, as local symbols; tools/sanitize.py
 * reads their offsets from the runtime's symbol table and compiles them in here, relative to
 * an exported anchor (__asan_init), and a second exported symbol checks that the runtime
 * loaded is the one read. (LLVM's handler also takes LeakSanitizer's global mutex, whose
 * lock function GCC 12 inlines; only a leak check takes it, and only at exit here.)
 *
 * Registered from this library's constructor, before any library the process loads later
 * registers its own: glibc runs the prepare handlers in reverse order of registration, so this
 * one runs last (after those that allocate, such as OpenBLAS's), and its unlocking runs first.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#if !defined(ANCHOR_TO_CHECK) || !defined(ANCHOR_TO_LOCK_THREADS)
#error "built by tools/sanitize.py, which defines the runtime's offsets"
#endif

typedef void (*runtime_fn)(void);

static runtime_fn lock_threads, unlock_threads, lock_allocator, unlock_allocator, lock_depot,
    unlock_depot;

static void before_fork(void) {
    lock_threads();
    lock_allocator();
    lock_depot();
}

static void after_fork(void) {
    unlock_depot();
    unlock_allocator();
    unlock_threads();
}

__attribute__((constructor)) static void install(void) {
    char *anchor = dlsym(RTLD_DEFAULT, "__asan_init");
    char *check = dlsym(RTLD_DEFAULT, "__lsan_do_recoverable_leak_check");
    if (anchor == NULL || check == NULL || check - anchor != (intptr_t)ANCHOR_TO_CHECK) {
        fprintf(stderr, "asan fork guard: the AddressSanitizer runtime loaded is not %s, whose "
                        "symbols tools/sanitize.py read (or it is not loaded first)\n",
                RUNTIME_PATH);
        abort();
    }
    lock_threads = (runtime_fn)(anchor + ANCHOR_TO_LOCK_THREADS);
    unlock_threads = (runtime_fn)(anchor + ANCHOR_TO_UNLOCK_THREADS);
    lock_allocator = (runtime_fn)(anchor + ANCHOR_TO_LOCK_ALLOCATOR);
    unlock_allocator = (runtime_fn)(anchor + ANCHOR_TO_UNLOCK_ALLOCATOR);
    lock_depot = (runtime_fn)(anchor + ANCHOR_TO_LOCK_DEPOT);
    unlock_depot = (runtime_fn)(anchor + ANCHOR_TO_UNLOCK_DEPOT);
    if (pthread_atfork(before_fork, after_fork, after_fork) != 0) {
        fprintf(stderr, "asan fork guard: pthread_atfork failed\n");
        abort();
    }
}
