/*===- loom/runtime.h - libloomrt, Loom's runtime C API -----------*- C -*-===*
 *
 * Loads a bundle written by `loomc -o model.loom`, binds input tensors and
 * runs its entry points on the CPU.
 *
 * Conventions:
 *  - Every function that can fail returns a loom_status_t: NULL means
 *    success; otherwise the caller owns the status and frees it with
 *    loom_status_free. The runtime never prints and never aborts.
 *  - Handles are opaque; each create has a destroy.
 *  - Options structs are filled by their _initialize function first, so
 *    fields can be added without breaking callers.
 *  - Out-parameters come last and are named out_*.
 *  - A session is not thread-safe: use one per thread, or serialize calls.
 *    Distinct sessions are independent.
 *
 *===----------------------------------------------------------------------===*/

#ifndef LOOM_RUNTIME_H
#define LOOM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define LOOM_API __declspec(dllexport)
#else
#define LOOM_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===--------------------------------------------------------------------===*
 * Status
 *===--------------------------------------------------------------------===*/

typedef enum loom_status_code_t {
  LOOM_STATUS_OK = 0,
  /** An argument is wrong: a NULL pointer, an unknown name, a size that
   *  does not match the tensor. */
  LOOM_STATUS_INVALID_ARGUMENT = 1,
  /** A file or directory is missing or unreadable. */
  LOOM_STATUS_NOT_FOUND = 2,
  /** The bundle is corrupted, incomplete or of another format version. */
  LOOM_STATUS_BAD_BUNDLE = 3,
  /** An input was not bound before a run. */
  LOOM_STATUS_FAILED_PRECONDITION = 4,
  /** Out of memory. */
  LOOM_STATUS_RESOURCE_EXHAUSTED = 5,
  LOOM_STATUS_INTERNAL = 6,
  /** A peer of a distributed run failed or did not answer in time. */
  LOOM_STATUS_UNAVAILABLE = 7,
} loom_status_code_t;

typedef struct loom_status_s *loom_status_t;

/** The code of `status` (LOOM_STATUS_OK for NULL). */
LOOM_API loom_status_code_t loom_status_code(loom_status_t status);
/** The message of `status` ("" for NULL); owned by the status. */
LOOM_API const char *loom_status_message(loom_status_t status);
/** Frees `status`; NULL is allowed. */
LOOM_API void loom_status_free(loom_status_t status);

/*===--------------------------------------------------------------------===*
 * Tensors
 *===--------------------------------------------------------------------===*/

typedef enum loom_dtype_t {
  LOOM_DTYPE_FLOAT32 = 0,
  LOOM_DTYPE_FLOAT64 = 1,
  LOOM_DTYPE_FLOAT16 = 2,
  LOOM_DTYPE_BFLOAT16 = 3,
  LOOM_DTYPE_INT64 = 4,
  LOOM_DTYPE_INT32 = 5,
  LOOM_DTYPE_INT16 = 6,
  LOOM_DTYPE_INT8 = 7,
  LOOM_DTYPE_BOOL = 8,
} loom_dtype_t;

/** Bytes of one element of `dtype` (bool takes one byte). */
LOOM_API size_t loom_dtype_size(loom_dtype_t dtype);
/** The numpy-style name of `dtype` ("float32", ...); static storage. */
LOOM_API const char *loom_dtype_name(loom_dtype_t dtype);

#define LOOM_MAX_RANK 16

typedef enum loom_tensor_kind_t {
  LOOM_TENSOR_INPUT = 0,
  /** Starts from the bundle's initial value (params.bin). */
  LOOM_TENSOR_PARAMETER = 1,
  LOOM_TENSOR_OUTPUT = 2,
  /** Optimizer state and step counters of a training step; starts at 0. */
  LOOM_TENSOR_STATE = 3,
  /** A float64 scalar of the optimizer or the schedule that a training step
   *  compiled with `loomc --runtime-hyperparams` takes at run time, named
   *  "hparam.<name>" ("hparam.lr"); starts at the value given to loomc. */
  LOOM_TENSOR_HYPERPARAMETER = 4,
} loom_tensor_kind_t;

typedef struct loom_tensor_info_t {
  /** Owned by the session; valid until it is destroyed. */
  const char *name;
  loom_tensor_kind_t kind;
  loom_dtype_t dtype;
  int32_t rank;
  int64_t shape[LOOM_MAX_RANK];
  /** Size of the dense, row-major data in bytes. */
  size_t bytes;
  /** For an output of a training step: the index of the parameter or state
   *  tensor it replaces after each run (the two buffers are swapped, so the
   *  parameter then holds the new value and the output the old one); -1
   *  otherwise. */
  int64_t updates;
} loom_tensor_info_t;

/*===--------------------------------------------------------------------===*
 * Sessions
 *===--------------------------------------------------------------------===*/

typedef struct loom_session_t loom_session_t;

typedef struct loom_session_options_t {
  /** Size of this struct, set by loom_session_options_initialize. */
  size_t struct_size;
  /** Entry point to run; NULL selects the bundle's first one. */
  const char *entry_point;
  /** Nonzero: join the distributed run the environment describes (RANK,
   *  WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, LOOM_STORE,
   *  LOOM_TIMEOUT_SEC) when the session is created; the bundle's collectives
   *  run over it (Gloo over TCP). Default 0. */
  int distributed;
} loom_session_options_t;

LOOM_API void loom_session_options_initialize(loom_session_options_t *options);

/** Loads the bundle directory at `bundle_path`, maps its library and reads
 *  the initial parameter values. `options` may be NULL (defaults). */
LOOM_API loom_status_t loom_session_create(const char *bundle_path,
                                           const loom_session_options_t *options,
                                           loom_session_t **out_session);
/** This process's rank in the session's distributed run (0 if none) and
 *  the number of ranks (1 if none). */
LOOM_API int loom_session_rank(const loom_session_t *session);
LOOM_API int loom_session_world_size(const loom_session_t *session);
/** The number of devices of the mesh the bundle was partitioned for
 *  (`loomc --mesh`), 1 for a bundle compiled for one device. */
LOOM_API int64_t loom_session_mesh_devices(const loom_session_t *session);
/** Copies the whole tensor `index` into `out` (`bytes` long, the size of
 *  the whole shape): for a tensor split over the run's ranks (data, tensor
 *  or ZeRO parallelism, along any dimensions), a collective that every rank
 *  must call at the same point; otherwise a copy. Checkpoints use it. */
LOOM_API loom_status_t loom_session_tensor_gather(loom_session_t *session,
                                                  size_t index, void *out,
                                                  size_t bytes);
/** Where this rank's block of tensor `index` lies along dimension `dim` of
 *  the whole tensor, for bundles compiled with `loomc --mesh`: block
 *  *out_index of *out_count equal blocks (0 of 1 when the dimension is not
 *  split). tensor_info's shape is the block's. */
LOOM_API loom_status_t loom_session_tensor_shard(const loom_session_t *session,
                                                 size_t index, int32_t dim,
                                                 int64_t *out_index,
                                                 int64_t *out_count);
/** The whole shape of tensor `index` as the model names it (its ONNX
 *  initializer's shape for a parameter, and so the shape checkpoints hold),
 *  however the bundle splits or views it: `out_shape` receives *out_rank
 *  entries (at most LOOM_MAX_RANK). Its size is the `bytes` that
 *  loom_session_tensor_gather and loom_session_set_tensor_whole take. */
LOOM_API loom_status_t
loom_session_tensor_whole_shape(const loom_session_t *session, size_t index,
                                int32_t *out_rank, int64_t *out_shape);
/** What a session's buffers take and what compiled code's temporaries
 *  take (the latter per process: every session's calls share libloomrt's
 *  allocator). Filled by loom_session_memory_stats. */
typedef struct loom_memory_stats_t {
  /** The session's own buffers, allocated when it was created. */
  size_t parameter_bytes;
  size_t state_bytes;
  size_t input_bytes;
  size_t output_bytes;
  /** Bytes compiled code has asked for and not freed now, and their most
   *  since the process started or loom_memory_reset_peak. */
  size_t temporary_bytes;
  size_t temporary_peak_bytes;
  /** The compiler's prediction of the temporaries' peak for one call of
   *  the session's entry point (loom-buffer-peak; 0 if the bundle has
   *  none). */
  size_t predicted_temporary_peak_bytes;
} loom_memory_stats_t;

/** Fills `out_stats` for `session`. Thread-safe. */
LOOM_API loom_status_t loom_session_memory_stats(
    const loom_session_t *session, loom_memory_stats_t *out_stats);
/** Starts the temporaries' high-water mark again from what is alive now. */
LOOM_API void loom_memory_reset_peak(void);

/** Sets input, parameter or state `index` from its whole value (`bytes` of
 *  dense row-major data of its whole shape): a split tensor takes this
 *  rank's block, which needs no communication. The caller keeps `data`. */
LOOM_API loom_status_t loom_session_set_tensor_whole(loom_session_t *session,
                                                     size_t index,
                                                     const void *data,
                                                     size_t bytes);
/** Frees the session and every buffer it owns; NULL is allowed. */
LOOM_API void loom_session_destroy(loom_session_t *session);

/** Number of tensors of the entry point: inputs, parameters and outputs. */
LOOM_API size_t loom_session_tensor_count(const loom_session_t *session);
/** Describes tensor `index` (in the bundle's argument order). */
LOOM_API loom_status_t loom_session_tensor_info(const loom_session_t *session,
                                                size_t index,
                                                loom_tensor_info_t *out_info);
/** Index of the tensor called `name`. */
LOOM_API loom_status_t loom_session_find_tensor(const loom_session_t *session,
                                                const char *name,
                                                size_t *out_index);

/** Copies `bytes` of dense row-major data into input or parameter `index`;
 *  `bytes` must equal the tensor's size. The caller keeps `data`. */
LOOM_API loom_status_t loom_session_set_tensor(loom_session_t *session,
                                               size_t index, const void *data,
                                               size_t bytes);
/** Sets the run-time hyperparameter `name` of a training step compiled
 *  with `loomc --runtime-hyperparams`: "lr", "weight_decay", "clip_norm"
 *  (0: no clipping), "momentum" (sgd), "beta1", "beta2", "epsilon" (adam,
 *  adamw), "warmup_steps" (warmup and cosine schedules), "total_steps" and
 *  "min_lr" (cosine). It holds for the following runs. A bundle whose
 *  hyperparameters are compiled in, or that lacks `name`, gives
 *  LOOM_STATUS_INVALID_ARGUMENT with a message that says so. */
LOOM_API loom_status_t loom_session_set_hyperparameter(loom_session_t *session,
                                                       const char *name,
                                                       double value);
/** The current value of the run-time hyperparameter `name`. */
LOOM_API loom_status_t loom_session_hyperparameter(
    const loom_session_t *session, const char *name, double *out_value);

/** Runs the entry point; every input must have been set once. Afterwards,
 *  outputs that update a parameter or state tensor are swapped into it. */
LOOM_API loom_status_t loom_session_run(loom_session_t *session);
/** The data of tensor `index` (outputs after a run; inputs and parameters
 *  as set). Owned by the session; valid until the next run or destroy. */
LOOM_API loom_status_t loom_session_tensor_data(const loom_session_t *session,
                                                size_t index,
                                                const void **out_data,
                                                size_t *out_bytes);

/*===--------------------------------------------------------------------===*
 * Checkpoints
 *===--------------------------------------------------------------------===*/

/** Writes the session's parameters, optimizer state and run-time
 *  hyperparameters, whole, to `path` in the checkpoint format of `loom-run
 *  train --checkpoint-dir` (which `loom-run train --init-from` reads),
 *  atomically: a temporary file renamed over `path`. For tensors split over
 *  the run's ranks it is a collective that every rank calls; rank 0
 *  writes. */
LOOM_API loom_status_t loom_session_save_checkpoint(loom_session_t *session,
                                                    const char *path);
/** Restores what loom_session_save_checkpoint or `loom-run train` saved:
 *  every parameter and state tensor by name (each rank takes its block),
 *  and the run-time hyperparameters. A checkpoint that lacks a tensor, has
 *  one the session does not, or holds one of another dtype or whole shape
 *  is refused before anything is set. */
LOOM_API loom_status_t loom_session_load_checkpoint(loom_session_t *session,
                                                    const char *path);

/*===--------------------------------------------------------------------===*
 * Tracing
 *===--------------------------------------------------------------------===*/

/** Nonzero: from now on, record this process's timeline: each run of an
 *  entry point ("step"), each action of a pipeline schedule (the forward or
 *  backward pass of a microbatch, the optimizer), and the time spent
 *  waiting for point-to-point messages and collectives. Off by default. */
LOOM_API void loom_trace_enable(int on);
/** Writes the timeline recorded so far as Chrome trace events (the JSON
 *  object format Perfetto and chrome://tracing open), with `process` (the
 *  rank) as their pid, to `path`. */
LOOM_API loom_status_t loom_trace_write(const char *path, int process);
/** Waits until every rank of the session's distributed run has called it
 *  (returns at once without one). */
LOOM_API loom_status_t loom_session_barrier(loom_session_t *session);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_RUNTIME_H */
