// The README's code fragments (C++ blocks without a main) are compiled as the
// body of a function after this header (tests/build/readme/check_code_blocks.py).
// It declares only what the documentation takes for granted: the program's
// own functions, which the fragments call but never define. Nothing here
// stands in for a proftrace name: those come from the real headers.
#pragma once

#include <proftrace/proftrace.hpp>

#include <iostream>
#include <utility>

void work();          // some work to time or profile
void run();           // one run of the program's workload
void solve(int n);    // a solver step
void train_step();    // one training step
void compute();       // an MPI rank's computation
void exchange();      // an MPI rank's communication
void serve();         // serving one request

// A thread pool that runs what it is given (here at once, on the caller).
struct thread_pool {
  template <class F>
  void submit(F f) {
    f();
  }
};
inline thread_pool pool;
