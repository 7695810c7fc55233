/* Programmatic dependent launch (sm_90+): a kernel launched with
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION may start while the
 * kernel before it in the stream is finishing; it must wait before touching
 * memory that kernel may write or read. */
#ifndef BC_PTX_GRIDDEP_H
#define BC_PTX_GRIDDEP_H

#include "sreg.h"

/* Blocks this thread until every prerequisite grid has completed and its
 * memory operations are visible; returns at once when there is none. */
BC_DEVICE void bc_griddep_wait(void) { asm volatile("griddepcontrol.wait;" ::: "memory"); }

/* Lets the next kernel of the stream be scheduled (it still waits in
 * bc_griddep_wait for this grid to complete). */
BC_DEVICE void bc_griddep_launch_dependents(void) { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

#endif
