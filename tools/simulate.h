/*
 * simulate.h - runs registration scripts in the conformance format.
 *
 *   # comment
 *   fallback KEY boxed|fallthrough     a backend fallback for every operator
 *   def SCHEMA                         define an operator
 *   impl KEY [fallthrough]             a kernel for the last defined operator
 *   ---                                end of the script (expected output follows)
 *
 * Each impl's debug text is "reg#N: <line>" (N counts the operator's impls
 * from 0); each fallback's is the line itself. Used by `disp simulate` and by
 * the conformance tests.
 */
#ifndef DISP_TOOLS_SIMULATE_H
#define DISP_TOOLS_SIMULATE_H

#include <stdio.h>

#include <disp.h>

typedef struct sim_script sim_script;

/*
 * sim_run - parses `text` and registers everything it says into the global
 * dispatcher. On success *out holds the script (its libraries stay
 * registered until sim_free). On failure returns the status, with a message
 * "LINE: <what>" in disp_last_error(), and nothing stays registered.
 */
disp_status sim_run(const char *text, sim_script **out);

/* sim_print_tables - "== ns::op.overload" then its dumped table, per defined op. */
disp_status sim_print_tables(const sim_script *s, FILE *out);

/* Number of operators the script defined, and the i-th one's handle. */
int sim_num_ops(const sim_script *s);
const disp_op *sim_op(const sim_script *s, int i);

/* The debug text of the operator's impl number `reg` ("reg#N: impl KEY"). */
const char *sim_impl_debug(const sim_script *s, int op_index, int reg);

/*
 * The test kernels log what runs to this stream (NULL: no log), in the
 * conformance format: "  kernel reg#N [KEY] at SLOT  ks=DispatchKeySet(...)"
 * or "  fallback [boxed] for OP at SLOT  ks=...". Kernels on backend and
 * Composite keys return their input; the others redispatch below themselves.
 */
void sim_set_log(FILE *log);

/*
 * sim_is_tensor_argument - whether `disp simulate --calls` passes the
 * scenario's tensor for an argument of this type: Tensor, Tensor[] (a list
 * of it) and Tensor?[]. Tensor? gets None.
 */
int sim_is_tensor_argument(const disp_type *t);

/*
 * sim_check_returns - DISP_OK when the test kernels can make up op's returns
 * (Tensor, Tensor[], optionals, numbers, bool, str; a Tensor needs a tensor
 * argument); else DISP_ERR_TYPE naming the operator and the return type.
 */
disp_status sim_check_returns(const disp_op *op);

/* sim_free - removes everything the script registered. NULL ok. */
void sim_free(sim_script *s);

/*
 * sim_read_file - reads the whole file ("-" is stdin) into a new string
 * with a NUL after its last byte; *len is the file's length, NUL bytes
 * inside it included (see sim_nul_line). NULL with errno set when the file
 * cannot be opened or read: EISDIR for a directory, ENOMEM.
 */
char *sim_read_file(const char *path, size_t *len);

/*
 * sim_nul_line - the line number (1-based) of the first line of text[0..len)
 * that holds a NUL byte, and in *col its column; 0 when there is none. A C
 * string would end at that byte and silently lose the rest of the file.
 */
int sim_nul_line(const char *text, size_t len, int *col);

#endif
